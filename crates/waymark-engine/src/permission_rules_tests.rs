//! The permission guard and the rules extensions give it: other actors, disagreeing rules,
//! private places under a rule.

use super::*;

/// What `guard` decides of a call by the goal's reviewer (its shell sandboxed).
fn by_reviewer(
    guard: &PermissionGuard,
    tool: &dyn Tool,
    args: &Value,
    s: &SessionRow,
) -> GuardDecision {
    by(guard, tool, args, s, waymark_protocol::CallActor::Verifier)
}

/// What `guard` decides of a call by `actor` (a shell sandboxed but for the session's agent).
fn by(
    guard: &PermissionGuard,
    tool: &dyn Tool,
    args: &Value,
    s: &SessionRow,
    actor: waymark_protocol::CallActor,
) -> GuardDecision {
    guard.before_tool_call(&GuardCall {
        tool,
        call_id: "c1",
        arguments: args,
        session: s,
        workspace: Path::new("/nonexistent-ws"),
        artifacts: Path::new("/nonexistent-artifacts"),
        shell_sandboxed: actor != waymark_protocol::CallActor::Main,
        grants: &[],
        answer: None,
        turn_id: 1,
        actor,
        api: None,
        protected: &Default::default(),
    })
}

/// A caller other than the session's agent gets nothing no rule gives it: without the
/// goal's rule, a "reviewer" call is refused even in `auto`, reads included.
#[test]
fn another_actor_gets_only_what_a_rule_gives() {
    let s = session(PermissionMode::Auto, InteractionMode::Default);
    let args = json!({"path": "a"});
    for tool in [&ReadFile as &dyn Tool, &Write, &Bash] {
        let d = by_reviewer(&PermissionGuard::default(), tool, &args, &s);
        assert!(
            matches!(d, GuardDecision::Deny(_)),
            "{}: {d:?}",
            tool.name()
        );
    }
}

/// Rules that disagree: the strictest wins whatever their order, so a careless rule that
/// allows a tool for every caller cannot hand the reviewer what the reviewer's rule refuses.
#[test]
fn the_strictest_rule_wins_whatever_the_order() {
    struct AllowAll;
    impl PermissionRule for AllowAll {
        fn name(&self) -> &'static str {
            "allow-all"
        }
        fn decide(&self, _call: &GuardCall<'_>) -> Option<GuardDecision> {
            Some(GuardDecision::Allow)
        }
    }
    struct ReviewerReadsOnly;
    impl PermissionRule for ReviewerReadsOnly {
        fn name(&self) -> &'static str {
            "reviewer"
        }
        fn decide(&self, call: &GuardCall<'_>) -> Option<GuardDecision> {
            (call.actor == waymark_protocol::CallActor::Verifier && call.tool.effects().writes)
                .then(|| GuardDecision::Deny("read only".into()))
        }
    }
    let s = session(PermissionMode::Auto, InteractionMode::Default);
    let args = json!({"path": "a", "content": ""});
    let rules: [Vec<Arc<dyn PermissionRule>>; 2] = [
        vec![Arc::new(AllowAll), Arc::new(ReviewerReadsOnly)],
        vec![Arc::new(ReviewerReadsOnly), Arc::new(AllowAll)],
    ];
    for r in rules {
        let d = by_reviewer(&PermissionGuard::new(r), &Write, &args, &s);
        assert_eq!(d, GuardDecision::Deny("read only".into()));
    }
}

/// A rule that refuses a tool holds for a read of a private place too: `auto` lets such a
/// read go by without asking, but never past a rule's refusal.
#[test]
fn a_rule_refusing_a_read_holds_for_a_private_place_in_auto() {
    struct NoReads;
    impl PermissionRule for NoReads {
        fn name(&self) -> &'static str {
            "no-reads"
        }
        fn decide(&self, call: &GuardCall<'_>) -> Option<GuardDecision> {
            (call.tool.name() == "read_file").then(|| GuardDecision::Deny("no reads here".into()))
        }
    }
    let s = session(PermissionMode::Auto, InteractionMode::Default);
    let args = json!({"path": "/proc/self/environ"});
    let call = |rules: Vec<Arc<dyn PermissionRule>>| {
        let guard = PermissionGuard::new(rules);
        by(
            &guard,
            &ReadFile,
            &args,
            &s,
            waymark_protocol::CallActor::Main,
        )
    };
    // Without the rule, `auto` reads the process's own folder (a private place) unasked;
    // the place is private (in `ask` the same read asks).
    assert_eq!(call(Vec::new()), GuardDecision::Allow);
    let asks = session(PermissionMode::Ask, InteractionMode::Default);
    let guard = PermissionGuard::new(Vec::new());
    assert!(matches!(
        by(&guard, &ReadFile, &args, &asks, waymark_protocol::CallActor::Main),
        GuardDecision::Ask(q) if q.summary.contains("is private")
    ));
    assert_eq!(
        call(vec![Arc::new(NoReads)]),
        GuardDecision::Deny("no reads here".into())
    );
}

/// A rule that asks about a private read and offers a grant for it does not win over the
/// private place's own question, which no grant may answer: on a tie of questions the
/// private read's comes first, whatever rules follow.
#[test]
fn on_a_tie_of_questions_the_private_read_asks_and_offers_no_grant() {
    struct AskReads;
    impl PermissionRule for AskReads {
        fn name(&self) -> &'static str {
            "ask-reads"
        }
        fn decide(&self, call: &GuardCall<'_>) -> Option<GuardDecision> {
            (call.tool.name() == "read_file").then(|| {
                GuardDecision::Ask(Box::new(PermissionQuestion {
                    tool: "read_file".into(),
                    shell: false,
                    scope: None,
                    arguments: call.arguments.clone(),
                    summary: "a rule's question".into(),
                    command: None,
                    files: Vec::new(),
                    git: false,
                    grants: GrantOffer {
                        session: Some(String::new()),
                        session_text: Some("every read, for this session".into()),
                        prefix: None,
                        prefix_text: None,
                    },
                    call_id: String::new(),
                    call_sha256: String::new(),
                }))
            })
        }
    }
    let s = session(PermissionMode::Ask, InteractionMode::Default);
    let args = json!({"path": "/proc/self/environ"});
    let guard = PermissionGuard::new(vec![Arc::new(AskReads), Arc::new(AskReads)]);
    let GuardDecision::Ask(q) = by(
        &guard,
        &ReadFile,
        &args,
        &s,
        waymark_protocol::CallActor::Main,
    ) else {
        panic!("a private read asks");
    };
    assert!(q.summary.contains("is private"), "{}", q.summary);
    assert_eq!(q.grants, GrantOffer::default(), "no grant is offered");
}
