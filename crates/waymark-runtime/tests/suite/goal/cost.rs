//! What model calls cost (G-31), a goal's cost budget (G-32) and the daily spending cap
//! (G-33), end to end: against mock servers on both wire protocols, and the scripted model
//! with a price set for it.

use super::super::mock_server::{Flavor, MockResponse, MockServer, on_mock};
use super::*;
use waymark_config::pricing::Price;
use waymark_protocol::cost::Spend;

/// The scripted model priced at $1 in / $2 out per million tokens: a call of 10,000 input
/// and 1,000 output tokens costs $0.012.
fn priced(mut c: Config) -> Config {
    c.pricing.insert(
        "scripted:*".into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cached_input_per_mtok: None,
        },
    );
    c
}

fn call_usage() -> Value {
    json!({"input_tokens": 10_000, "output_tokens": 1_000})
}

/// One reply with a tool call and one that ends the turn, each costing $0.012.
fn two_calls(tag: &str) -> [Value; 2] {
    [
        json!({"text": format!("working {tag}"), "usage": call_usage(),
               "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}),
        json!({"text": format!("done {tag}"), "usage": call_usage()}),
    ]
}

fn turn_costs(events: &[waymark_protocol::Event]) -> Vec<Option<f64>> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFinished { cost_usd, .. } => Some(*cost_usd),
            _ => None,
        })
        .collect()
}

/// An OpenAI reply with the usage given, and an Anthropic one (cache reads apart).
fn openai_reply(text: &str, call: bool, prompt: u64, cached: u64, out: u64) -> MockResponse {
    let mut s = String::new();
    let mut ev = |v: Value| s.push_str(&format!("data: {v}\n\n"));
    ev(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}));
    if call {
        ev(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "list_dir", "arguments": "{\"path\":\".\"}"}}]}}]}),
        );
    }
    let finish = if call { "tool_calls" } else { "stop" };
    ev(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    ev(
        json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": out,
        "prompt_tokens_details": {"cached_tokens": cached}}}),
    );
    s.push_str("data: [DONE]\n\n");
    MockResponse::sse(&s)
}

fn anthropic_reply(text: &str, input: u64, read: u64, out: u64) -> MockResponse {
    let mut s = String::new();
    let mut ev = |name: &str, v: Value| s.push_str(&format!("event: {name}\ndata: {v}\n\n"));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m",
        "usage": {"input_tokens": input, "cache_read_input_tokens": read, "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    ev(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": out}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    MockResponse::sse(&s)
}

#[tokio::test]
async fn g_31_each_call_is_priced_to_the_cent_on_both_wire_protocols() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 2.5,
            output_per_mtok: 10.0,
            cached_input_per_mtok: Some(0.25),
        },
    );
    c.pricing.insert(
        "anthropic:claude-mock".into(),
        Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
            cached_input_per_mtok: Some(0.3),
        },
    );
    // OpenAI: a call with a tool and one without. By hand:
    //   100,000 fresh × $2.50 + 23,456 cached × $0.25 + 7,890 out × $10 = $0.334764
    //    50,000 fresh × $2.50 + 150,000 cached × $0.25 + 1,000 out × $10 = $0.172500
    let server = MockServer::start_with(|r| {
        if r.body.to_string().contains("\"tool\"") {
            openai_reply("done", false, 200_000, 150_000, 1_000)
        } else {
            openai_reply("looking", true, 123_456, 23_456, 7_890)
        }
    })
    .await;
    let h = Harness::new(c.clone());
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("price it")).await;
    assert_eq!(turn_costs(&ev), [Some(0.507264)]);
    let snap = rt.snapshot(s.id()).unwrap();
    assert_eq!(
        snap.spend,
        Spend {
            micros: 507_264,
            unpriced_calls: 0
        }
    );
    assert_eq!(format!("{:.2}", snap.cost_usd.unwrap()), "0.51");
    s.shutdown().await.unwrap();
    // Anthropic (cache reads reported apart from the input):
    //   40,000 fresh × $3 + 60,000 read × $0.30 + 2,000 out × $15 = $0.168000
    let server = MockServer::start_with(|_| anthropic_reply("hi", 40_000, 60_000, 2_000)).await;
    let (rt, s) = on_mock(&h, Flavor::Anthropic, &server, |_| {});
    let ev = run(&s, user("price it")).await;
    assert_eq!(turn_costs(&ev), [Some(0.168)]);
    // The day counts both sessions.
    let day = rt.daily_spend().unwrap();
    assert_eq!(day.spend.micros, 507_264 + 168_000);
    assert_eq!(day.cap_usd, None);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_31_a_model_with_no_price_costs_unknown_never_zero() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [{"text": "hi", "usage": call_usage()}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("hello")).await;
    assert_eq!(turn_costs(&ev), [None]);
    let snap = h.runtime.snapshot(s.id()).unwrap();
    assert_eq!((snap.cost_usd, snap.spend.unpriced_calls), (None, 1));
    assert!(
        snap.spend.label().starts_with("unknown"),
        "{}",
        snap.spend.label()
    );
    assert_eq!(h.runtime.daily_spend().unwrap().cost_usd, None);
    // A cost budget for it is refused, naming the setting to give it a price.
    let e = s.submit(user("/goal fix it cost=$5")).await.unwrap_err();
    assert_eq!(
        (e.code(), e.info().setting.as_deref()),
        ("unpriced_model", Some("pricing"))
    );
    assert!(e.to_string().contains("scripted:"), "{e}");
    assert!(h.runtime.goal(s.id()).unwrap().is_none());
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_32_a_cost_budget_ends_the_goal_with_no_tool_run_after_and_raising_it_resumes() {
    let mut script: Vec<Value> = two_calls("one").into();
    // The summary turn, then the work after the budget is raised.
    script.push(json!({"text": "Summary: listed once.", "usage": call_usage()}));
    script.extend(two_calls("two"));
    let h = Harness::new(priced(config(Verification::None)));
    let s = h.session(
        json!({"responses": script, "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("/goal list the folder cost=$0.01")).await;
    let g = goal(&h, &s);
    assert_eq!(status(&g), (GoalStatus::BudgetLimited, GoalReason::Cost));
    assert_eq!(g.budget.cost.limit, Some(10_000));
    assert!(
        g.budget.cost.reached && g.budget.cost.used >= 12_000,
        "{:?}",
        g.budget
    );
    // The first call already spent $0.012: its tool call is refused, none runs after.
    let r = results(&ev);
    assert!(!r.is_empty());
    assert!(r.iter().all(|x| x.1 == ToolStatus::Denied), "{r:?}");
    // Raising it resumes the goal.
    let ev = run(&s, user("/goal cost=$1")).await;
    let g = goal(&h, &s);
    assert!(ev.iter().any(|e| matches!(
        &e.kind,
        EventKind::GoalUpdate {
            reason: GoalReason::BudgetRaised,
            ..
        }
    )));
    assert!(
        results(&ev).iter().any(|x| x.1 == ToolStatus::Ok),
        "{:?}",
        results(&ev)
    );
    assert_eq!(g.budget.cost.limit, Some(1_000_000));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn g_33_the_daily_cap_pauses_the_goals_of_two_sessions_and_starts_no_call() {
    let mut c = priced(config(Verification::None));
    c.limits.daily_cost_usd = Some(0.03);
    let h = Harness::new(c);
    let script = |tag: &str| {
        let mut v: Vec<Value> = two_calls(&format!("{tag}1")).into();
        v.extend(two_calls(&format!("{tag}2")));
        v.extend(two_calls(&format!("{tag}3")));
        json!({"responses": v})
    };
    let a = h.session(script("a"), PermissionMode::Auto);
    let b = h.session(script("b"), PermissionMode::Auto);
    // A spends $0.024 in its first turn, $0.012 more in its second, and then the cap of
    // $0.03 is reached: its next call does not start.
    run(&a, user("/goal work on a")).await;
    let ga = h.runtime.goal(a.id()).unwrap().unwrap();
    assert_eq!(
        status(&ga),
        (GoalStatus::UsageLimited, GoalReason::SpendCap)
    );
    let limit = ga.usage_limit.expect("when the cap lifts");
    assert!(limit.auto_resume, "the next day lifts it");
    // B's goal never gets a call.
    let ev = run(&b, user("/goal work on b")).await;
    let gb = h.runtime.goal(b.id()).unwrap().unwrap();
    assert_eq!(
        status(&gb),
        (GoalStatus::UsageLimited, GoalReason::SpendCap)
    );
    let errors: Vec<String> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFinished { error: Some(e), .. } => Some(e.code.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors, ["spend_cap"]);
    let day = h.runtime.daily_spend().unwrap();
    assert!(day.capped && day.spend.micros == 36_000, "{day:?}");
    assert_eq!(
        h.runtime.snapshot(b.id()).unwrap().spend.micros,
        0,
        "B made no call"
    );
    // A higher cap lets calls start again.
    let mut higher = h.runtime.config().as_ref().clone();
    higher.limits.daily_cost_usd = Some(1.0);
    h.runtime.apply_settings(higher).unwrap();
    run(&b, user("/goal resume")).await;
    assert!(h.runtime.snapshot(b.id()).unwrap().spend.micros > 0);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// The day's cap reached by the worker's turn that claims completion stops the reviewer
/// before its call: the goal is `usage_limited(spend_cap)` and resumes when the cap lifts (not
/// paused as if the reviewer had failed), and the claim is checked again then.
#[tokio::test]
async fn g_33_the_daily_cap_met_at_review_limits_the_goal_and_the_claim_is_checked_later() {
    let mut c = priced(config(Verification::Subagent));
    c.limits.daily_cost_usd = Some(0.012);
    let h = Harness::new(c);
    // The claim (which ends the turn) costs $0.012: the cap is reached as the turn ends.
    let mut first = claim("it is done");
    first["usage"] = call_usage();
    let mut again = claim("it is done");
    again["usage"] = json!({"input_tokens": 1, "output_tokens": 1});
    let script = json!({"responses": [first, again],
        "verifier": [{"text": "All there.\nVERDICT: PASS"}]});
    let s = h.session(script, PermissionMode::Auto);
    run(&s, user("/goal finish it")).await;
    assert!(h.runtime.daily_spend().unwrap().capped);
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        status(&g),
        (GoalStatus::UsageLimited, GoalReason::SpendCap),
        "the reviewer's stop is the cap's"
    );
    assert!(g.usage_limit.expect("when it lifts").auto_resume);
    // A higher cap, and the goal resumed: the claim is made again and this time checked.
    let mut higher = h.runtime.config().as_ref().clone();
    higher.limits.daily_cost_usd = Some(1.0);
    h.runtime.apply_settings(higher).unwrap();
    run(&s, user("/goal resume")).await;
    assert_eq!(
        status(&h.runtime.goal(s.id()).unwrap().unwrap()),
        (GoalStatus::Complete, GoalReason::VerifierMet)
    );
    s.shutdown().await.unwrap();
}

fn turn_errors(events: &[waymark_protocol::Event]) -> Vec<waymark_protocol::ErrorInfo> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFinished { error: Some(e), .. } => Some((**e).clone()),
            _ => None,
        })
        .collect()
}

/// The red-team's attack: `limits.daily_cost_usd` set, and a model the built-in list does not
/// price (`openai:gpt-5.1`). Its calls would count as unpriced, never toward the cap; so no call
/// is sent to it while the cap is set, and the error names the model and the `pricing` key
/// that would price it. With a price given, the same call goes.
#[tokio::test]
async fn g_33_an_unpriced_model_under_the_daily_cap_is_refused_before_it_is_sent() {
    let mut c = Config::default();
    c.limits.daily_cost_usd = Some(5.0);
    let h = Harness::new(c);
    let server = MockServer::start_with(|_| openai_reply("hi", false, 1_000, 0, 10)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    s.submit(Op::SetModel {
        model: "openai:gpt-5.1".into(),
    })
    .await
    .unwrap();
    let ev = run(&s, user("spend freely")).await;
    let errors = turn_errors(&ev);
    assert_eq!(errors.len(), 1, "{ev:?}");
    let e = &errors[0];
    assert_eq!(
        (e.code.as_str(), e.setting.as_deref()),
        ("unpriced_model", Some("pricing"))
    );
    assert!(
        e.message.contains("`openai:gpt-5.1`") && e.message.contains("limits.daily_cost_usd"),
        "{}",
        e.message
    );
    assert!(server.recorded().is_empty(), "nothing was sent");
    // Priced, it goes, and it counts toward the cap.
    let mut priced = rt.config().as_ref().clone();
    priced.pricing.insert(
        "openai:gpt-5.1".into(),
        Price {
            input_per_mtok: 1.25,
            output_per_mtok: 10.0,
            cached_input_per_mtok: None,
        },
    );
    rt.apply_settings(priced).unwrap();
    let ev = run(&s, user("now priced")).await;
    assert!(turn_errors(&ev).is_empty(), "{ev:?}");
    assert_eq!(server.recorded().len(), 1);
    assert!(rt.daily_spend().unwrap().spend.micros > 0);
    s.shutdown().await.unwrap();
}

/// A goal's cost budget holds the same way: switched to an unpriced model after the budget
/// was set (the budget itself is refused for an unpriced model), the goal's next call is
/// refused before it is sent.
#[tokio::test]
async fn g_32_a_goal_cost_budget_refuses_a_model_switched_to_that_has_no_price() {
    let mut c = config(Verification::None);
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 1.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    // The same reply each time: the no-progress breaker stops the goal after a few turns.
    let server = MockServer::start_with(|_| openai_reply("working", false, 1_000, 0, 10)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    run(&s, user("/goal grind through it cost=$5")).await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_ne!(g.status, GoalStatus::Active, "{g:?}");
    s.submit(Op::SetModel {
        model: "openai:gpt-5.1".into(),
    })
    .await
    .unwrap();
    let before = server.recorded().len();
    let ev = run(&s, user("/goal resume")).await;
    let errors = turn_errors(&ev);
    assert!(
        errors.iter().any(|e| e.code == "unpriced_model"
            && e.message.contains("the goal's cost budget")
            && e.message.contains("`openai:gpt-5.1`")),
        "{errors:?}"
    );
    assert_eq!(
        server.recorded().len(),
        before,
        "no call went to the unpriced model"
    );
    assert!(rt.goal(s.id()).unwrap().is_some());
    s.shutdown().await.unwrap();
}

/// One call cannot overshoot the cap without bound: its output is held to what the cap has
/// left once its input is paid (`max_tokens` on the wire), and a call whose input alone would
/// pass what is left does not start.
#[tokio::test]
async fn g_33_a_call_output_is_held_to_what_the_cap_has_left() {
    let mut c = Config::default();
    // $10 per million output tokens is 10 micro-dollars a token; $1 per million input.
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 10.0,
            cached_input_per_mtok: None,
        },
    );
    c.limits.daily_cost_usd = Some(0.02);
    let h = Harness::new(c);
    // The first call reports 10,000 input tokens ($0.01) and 100 output ($0.001).
    let server = MockServer::start_with(|_| openai_reply("hi", false, 10_000, 0, 100)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    run(&s, user("first")).await;
    let first = server.recorded()[0].body["max_tokens"].as_u64().unwrap();
    // $0.02 left, less the cost of the request's input (system prompt and tools, about a
    // thousand tokens): under 2,000 output tokens, not 8,192.
    assert!((1_500..2_000).contains(&first), "max_tokens {first}");
    // $0.011 spent, $0.009 left: the next call's output is held to under 900 tokens, about
    // 1,100 fewer than the first's.
    run(&s, user("second")).await;
    let second = server.recorded()[1].body["max_tokens"].as_u64().unwrap();
    assert!(
        second < 900 && first - second >= 1_000,
        "max_tokens {first} then {second}"
    );
    // Its reported 10,000 input tokens pass the cap: the day is capped, nothing more starts.
    let ev = run(&s, user("third")).await;
    assert_eq!(turn_errors(&ev)[0].code, "spend_cap");
    assert_eq!(server.recorded().len(), 2);
    assert!(rt.daily_spend().unwrap().capped);
    s.shutdown().await.unwrap();
}

/// A call whose input alone would pass what the cap has left is not sent.
#[tokio::test]
async fn g_33_a_call_whose_input_alone_passes_the_cap_is_not_sent() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 10_000.0,
            output_per_mtok: 10.0,
            cached_input_per_mtok: None,
        },
    );
    // A request of some hundreds of tokens at $10,000 per million costs dollars.
    c.limits.daily_cost_usd = Some(0.5);
    let h = Harness::new(c);
    let server = MockServer::start_with(|_| openai_reply("hi", false, 10, 0, 10)).await;
    let (_rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("a question long enough to cost more than is left")).await;
    let e = &turn_errors(&ev)[0];
    assert_eq!(e.code, "spend_cap");
    assert!(e.message.contains("its input alone"), "{}", e.message);
    assert!(server.recorded().is_empty());
    s.shutdown().await.unwrap();
}

/// `"usage": {}` from the provider: the call is estimated, so a priced model's call costs
/// money against the cap (not $0), and the turn's record says its usage is estimated.
#[tokio::test]
async fn g_31_an_empty_usage_is_estimated_and_charged_and_said_so() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1_000.0,
            output_per_mtok: 1_000.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "a reply of some length ".repeat(10)}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {}}),
    );
    let server = MockServer::start_with(move |_| MockResponse::sse(&body)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("hello")).await;
    let usage = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AssistantMessage { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert!(usage.estimated && usage.input_tokens > 0 && usage.output_tokens > 0);
    let finished = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert!(finished.estimated, "the turn's record says estimated");
    assert!(
        rt.daily_spend().unwrap().spend.micros > 0,
        "charged, not $0"
    );
    s.shutdown().await.unwrap();
}

/// The spend of today, in micro-dollars.
fn spent_today(rt: &waymark_runtime::Runtime) -> u64 {
    rt.daily_spend().unwrap().spend.micros
}

/// Third red-team: a call that failed after the provider began answering (an error in the
/// stream, a stream cut short) was charged $0 though the provider bills it. It is charged on
/// the estimate of its request.
#[tokio::test]
async fn g_31_a_call_that_fails_while_answering_is_charged() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1_000.0,
            output_per_mtok: 1_000.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    let broken = format!(
        "data: {}\n\ndata: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "a long answer ".repeat(50)}}]}),
        json!({"error": {"message": "the server fell over", "code": "server_error"}}),
    );
    let server = MockServer::start_with(move |_| MockResponse::sse(&broken)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("answer at length")).await;
    assert_eq!(turn_errors(&ev).len(), 1, "{ev:?}");
    assert!(spent_today(&rt) > 0, "charged, not $0");
    let finished = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert!(
        finished.estimated && finished.input_tokens > 0,
        "{finished:?}"
    );
    s.shutdown().await.unwrap();
}

/// Third red-team: a compaction whose reply holds no summary was never charged (and a
/// compaction is tried again and again): its call is charged like any other.
#[tokio::test]
async fn g_31_a_compaction_with_no_summary_is_still_charged() {
    let h = Harness::new(priced(Config::default()));
    let s = h.session(
        json!({"responses": [
            {"text": "one ".repeat(200), "usage": {"input_tokens": 10, "output_tokens": 10}},
            {"text": "two ".repeat(200), "usage": {"input_tokens": 10, "output_tokens": 10}},
        ], "compact": [
            {"text": "", "usage": {"input_tokens": 20_000, "output_tokens": 10}}
        ]}),
        PermissionMode::Auto,
    );
    run(&s, user("first")).await;
    run(&s, user("second")).await;
    let before = spent_today(&h.runtime);
    run(&s, user("/compact")).await;
    // 20,000 input tokens at $1 a million: $0.02 (and 10 out at $2).
    assert_eq!(spent_today(&h.runtime) - before, 20_020);
    s.shutdown().await.unwrap();
}

/// Third red-team: a goal's budget that cannot pay for the next call's input sent it anyway
/// with `max_tokens: 1`, pure cost past the budget. The call is not sent, and the goal is
/// `budget_limited(cost)`.
#[tokio::test]
async fn g_32_a_goal_budget_that_cannot_pay_for_the_next_call_stops_the_goal() {
    let mut c = config(Verification::None);
    // $100 a million in and out: a request of a few thousand tokens costs some tenths.
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 100.0,
            output_per_mtok: 100.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    // The first reply reports 25,000 tokens in ($2.50): about $0.10 of the budget is left,
    // less than the next request's input.
    let server = MockServer::start_with(|_| openai_reply("working", true, 25_000, 0, 10)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    run(&s, user("/goal look around cost=$2.60")).await;
    let g = rt.goal(s.id()).unwrap().unwrap();
    assert_eq!(status(&g), (GoalStatus::BudgetLimited, GoalReason::Cost));
    assert_eq!(server.recorded().len(), 1, "the second call was not sent");
    assert_eq!(g.budget.cost.used, 2_501_000, "{:?}", g.budget.cost);
    s.shutdown().await.unwrap();
}

/// Third red-team: a model switched while a call is under way charged the call at the new
/// model's price (nothing, for an unpriced or local one). A call is charged by the model it
/// went to.
#[tokio::test]
async fn g_31_a_call_is_charged_by_the_model_it_went_to() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1_000.0,
            output_per_mtok: 1_000.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    let server = MockServer::start_with(|_| {
        let mut r = openai_reply("slow", false, 1_000, 0, 10);
        // Cut in pieces a moment apart: the switch lands while the call streams.
        let body: Vec<u8> = r.chunks.concat();
        r.chunks = body.chunks(16).map(<[u8]>::to_vec).collect();
        r.pause = std::time::Duration::from_millis(40);
        r
    })
    .await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let mut rx = s.subscribe();
    s.submit(user("go")).await.unwrap();
    // Wait for the call to start streaming, then switch to a model with no price.
    loop {
        let e = rx.recv().await.unwrap();
        if matches!(e.kind, EventKind::AssistantDelta { .. }) {
            break;
        }
    }
    s.submit(Op::SetModel {
        model: "openai:gpt-5.1".into(),
    })
    .await
    .unwrap();
    super::super::harness::collect(&mut rx).await;
    let day = rt.daily_spend().unwrap().spend;
    assert_eq!(day.unpriced_calls, 0, "{day:?}");
    assert!(
        day.micros >= 1_000_000,
        "priced as the model it went to: {day:?}"
    );
    s.shutdown().await.unwrap();
}

/// A price of $1 a million tokens in and out for `model` (`openai:gpt-mock`).
fn dollar_a_million(mut c: Config, model: &str) -> Config {
    c.pricing.insert(
        model.into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 1.0,
            cached_input_per_mtok: None,
        },
    );
    c
}

fn finished_usage(events: &[waymark_protocol::Event]) -> waymark_protocol::Usage {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::TurnFinished { usage, .. } => Some(*usage),
            _ => None,
        })
        .expect("a finished turn")
}

/// Fourth red-team: with the goal's budget spent by the reviewer's first call, the reviewer
/// went on making its calls (eight in all) since a spent budget let every call through as if
/// it were the summary's. No call of the goal's turn or its reviewer goes past a spent
/// budget; only the summary turn does.
#[tokio::test]
async fn g_32_the_reviewer_makes_no_call_past_a_spent_goal_budget() {
    let mut first = claim("it is done");
    first["usage"] = call_usage();
    let looking = json!({"text": "looking", "usage": call_usage(),
        "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]});
    let script = json!({
        "responses": [first, {"text": "Summary: claimed.", "usage": {"input_tokens": 1, "output_tokens": 1}}],
        "when_exhausted": "repeat_last",
        "verifier": [looking.clone(), looking.clone(), looking.clone(), looking.clone(),
                     looking.clone(), looking.clone(), looking.clone(), looking],
    });
    let h = Harness::new(priced(config(Verification::Subagent)));
    let s = h.session(script, PermissionMode::Auto);
    run(&s, user("/goal finish it cost=$0.013")).await;
    let g = goal(&h, &s);
    assert_eq!(status(&g), (GoalStatus::BudgetLimited, GoalReason::Cost));
    // The claim ($0.012), the reviewer's one call the $0.001 left let out ($0.012), the
    // summary: never the reviewer's seven more.
    assert!(g.budget.cost.used <= 24_010, "{:?}", g.budget.cost);
    s.shutdown().await.unwrap();
}

/// Fourth red-team: a call that broke after streaming 32 KB of tool-call arguments was
/// charged no output (only streamed text counted). What streamed is charged, arguments and
/// reasoning alike.
#[tokio::test]
async fn g_31_a_call_broken_after_streaming_tool_arguments_is_charged_for_them() {
    let h = Harness::new(dollar_a_million(Config::default(), "openai:gpt-mock"));
    let mut body = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
            "type": "function", "function": {"name": "write", "arguments": "{\"path\":\"a.txt\",\"content\":\""}}]}}]})
    );
    for _ in 0..32 {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": "x".repeat(1000)}}]}}]})
        ));
    }
    body.push_str("data: {not json\n\n");
    let server = MockServer::start_with(move |_| MockResponse::sse(&body)).await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("write it")).await;
    assert_eq!(turn_errors(&ev).len(), 1, "{ev:?}");
    let u = finished_usage(&ev);
    assert!(u.estimated && u.output_tokens >= 7_500, "{u:?}");
    assert!(spent_today(&rt) >= 7_500, "{}", spent_today(&rt));
    s.shutdown().await.unwrap();
}

/// Fourth red-team: an Anthropic stream that reported 50,000 input tokens, streamed 32 KB of
/// thinking and then said "prompt is too long" was charged nothing (that error went straight
/// to compaction). It is charged what the provider reported and what streamed.
#[tokio::test]
async fn g_31_a_stream_that_ends_too_long_after_answering_is_charged() {
    let h = Harness::new(dollar_a_million(Config::default(), "anthropic:claude-mock"));
    let mut body = String::new();
    let mut ev = |name: &str, v: Value| body.push_str(&format!("event: {name}\ndata: {v}\n\n"));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m",
        "usage": {"input_tokens": 50_000, "output_tokens": 1}}}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    );
    for _ in 0..32 {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "t".repeat(1000)}}),
        );
    }
    ev(
        "error",
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 200000 maximum"}}),
    );
    let server = MockServer::start_with(move |_| MockResponse::sse(&body)).await;
    let (rt, s) = on_mock(&h, Flavor::Anthropic, &server, |_| {});
    let ev = run(&s, user("think")).await;
    assert_eq!(turn_errors(&ev).len(), 1, "{ev:?}");
    let u = finished_usage(&ev);
    assert!(
        u.input_tokens >= 50_000 && u.output_tokens >= 7_500,
        "{u:?}"
    );
    assert!(spent_today(&rt) >= 57_500, "{}", spent_today(&rt));
    s.shutdown().await.unwrap();
}

/// Fourth red-team: Stop during a call that had streamed 32 KB of reasoning charged no
/// output. What streamed is charged.
#[tokio::test]
async fn g_31_a_stopped_call_is_charged_for_the_reasoning_it_streamed() {
    let h = Harness::new(dollar_a_million(Config::default(), "openai:gpt-mock"));
    let thinking: String = (0..32)
        .map(|_| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"reasoning_content": "r".repeat(1000)}}]})
            )
        })
        .collect();
    let server = MockServer::start_with(move |_| {
        let mut r = MockResponse::sse(&thinking);
        // The rest never comes in time.
        r.chunks.push(b"data: [DONE]\n\n".to_vec());
        r.pause = std::time::Duration::from_secs(60);
        r
    })
    .await;
    let (rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let mut rx = s.subscribe();
    s.submit(user("think hard")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    // The reasoning is out (it is not shown as text): wait for the request, then a moment.
    while server.recorded().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    s.submit(Op::Stop).await.unwrap();
    let ev = super::super::harness::collect(&mut rx).await;
    let u = finished_usage(&ev);
    assert!(u.estimated && u.output_tokens >= 7_500, "{u:?}");
    assert!(spent_today(&rt) >= 7_500, "{}", spent_today(&rt));
    s.shutdown().await.unwrap();
}

/// Fifth red-team: an OpenAI reasoning model stopped while it reasoned (nothing streams then)
/// was charged for its input alone, though the provider bills the reasoning. Until the
/// provider reports the output, such a call is charged the output it was allowed.
#[tokio::test]
async fn g_31_a_model_stopped_while_reasoning_out_of_sight_is_charged_its_allowed_output() {
    let h = Harness::new(dollar_a_million(Config::default(), "openai:o3"));
    let opening = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    );
    let server = MockServer::start_with(move |_| {
        let mut r = MockResponse::sse(&opening);
        // The model reasons; its answer never comes in time.
        r.chunks.push(b"data: [DONE]\n\n".to_vec());
        r.pause = std::time::Duration::from_secs(60);
        r
    })
    .await;
    let (rt, s) =
        super::super::mock_server::on_mock_model(&h, Flavor::OpenAi, &server, "openai:o3", |_| {});
    let mut rx = s.subscribe();
    s.submit(user("think hard")).await.unwrap();
    s.submit(Op::Resume).await.unwrap();
    while server.recorded().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    s.submit(Op::Stop).await.unwrap();
    let ev = super::super::harness::collect(&mut rx).await;
    let sent = server.recorded()[0].body.clone();
    let allowed = sent["max_tokens"]
        .as_u64()
        .or_else(|| sent["max_completion_tokens"].as_u64())
        .unwrap();
    let u = finished_usage(&ev);
    assert!(
        u.estimated && u.output_tokens == allowed,
        "{u:?} of {allowed}"
    );
    assert!(spent_today(&rt) >= allowed, "{}", spent_today(&rt));
    s.shutdown().await.unwrap();
}

/// Fourth red-team: a compaction between turns was charged to the day but to no session, so
/// the session's cost left it out. It counts in the session's total.
#[tokio::test]
async fn g_31_a_compaction_between_turns_counts_in_the_sessions_cost() {
    let h = Harness::new(priced(Config::default()));
    let s = h.session(
        json!({"responses": [
            {"text": "one ".repeat(200), "usage": {"input_tokens": 10, "output_tokens": 10}},
            {"text": "two ".repeat(200), "usage": {"input_tokens": 10, "output_tokens": 10}},
        ], "compact": [
            {"text": "the summary", "usage": {"input_tokens": 20_000, "output_tokens": 10}}
        ]}),
        PermissionMode::Auto,
    );
    run(&s, user("first")).await;
    run(&s, user("second")).await;
    let before = h.runtime.snapshot(s.id()).unwrap().spend.micros;
    run(&s, user("/compact")).await;
    let after = h.runtime.snapshot(s.id()).unwrap().spend.micros;
    assert_eq!(after - before, 20_020);
    s.shutdown().await.unwrap();
}

/// Fourth red-team: a goal's own update after its reviewer spent said the goal's cost was
/// what the turn had spent, not reached: the goal settles on its cost as stored.
#[tokio::test]
async fn g_32_the_goal_update_after_review_carries_the_reviewers_cost() {
    let mut first = claim("it is done");
    first["usage"] = call_usage();
    let mut pass = json!({"text": "All there.\nVERDICT: PASS"});
    pass["usage"] = call_usage();
    let script = json!({"responses": [first], "verifier": [pass]});
    let h = Harness::new(priced(config(Verification::Subagent)));
    let s = h.session(script, PermissionMode::Auto);
    let ev = run(&s, user("/goal finish it cost=$1")).await;
    let last = ev
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::GoalUpdate { usage, .. } => Some(usage.cost.used),
            _ => None,
        })
        .expect("a goal update");
    assert_eq!(last, 24_000, "the claim's and the reviewer's calls");
    s.shutdown().await.unwrap();
}

/// Fifth red-team: a process killed during the reviewer's call left its hold, which the next
/// open charged to the (finished) turn the reviewer checked, but not to the goal: the goal's
/// cost missed the call. It counts for the goal as for the turn and the day.
#[tokio::test]
async fn g_32_a_reviewer_call_cut_off_by_a_killed_process_counts_for_the_goal() {
    let mut first = claim("it is done");
    first["usage"] = call_usage();
    let mut pass = json!({"text": "All there.\nVERDICT: PASS"});
    pass["usage"] = call_usage();
    let script = json!({"responses": [first], "verifier": [pass]});
    let h = Harness::new(priced(config(Verification::Subagent)));
    let s = h.session(script, PermissionMode::Auto);
    run(&s, user("/goal finish it cost=$1")).await;
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let before = h.runtime.goal(&id).unwrap().unwrap().budget.cost.used;
    assert_eq!(before, 24_000);
    // What a reviewer's call in flight leaves when its process is killed: its hold, on the
    // turn it checks, which had finished.
    let store = h.runtime.store();
    let turn = store
        .read(|c| waymark_runtime::store::turns::ids(c, &id))
        .unwrap()
        .into_iter()
        .max()
        .unwrap();
    store
        .write(0, |tx| tx.hold(&id, Some(turn), "2026-12-05", 33_000))
        .unwrap();
    let s = h
        .runtime
        .open_session(&id, waymark_runtime::SessionSpec::default())
        .unwrap();
    let g = h.runtime.goal(&id).unwrap().unwrap();
    assert_eq!(g.budget.cost.used, before + 33_000, "{:?}", g.budget.cost);
    assert_eq!(
        h.runtime.snapshot(&id).unwrap().spend.micros,
        before + 33_000,
        "the goal's cost and the session's agree"
    );
    s.shutdown().await.unwrap();
}

/// Fourth red-team: sessions calling at the same moment each saw all the cap had left, so
/// together they could pass it by a call each. A call in flight holds its most possible cost
/// against the day, checked and held in one transaction: another session, here in another
/// process on the same data folder, sees it and gets only what is left.
#[tokio::test]
async fn g_33_a_call_in_flight_holds_its_cost_against_other_processes() {
    let mut c = Config::default();
    c.pricing.insert(
        "openai:gpt-mock".into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 10.0,
            cached_input_per_mtok: None,
        },
    );
    // 8,192 output tokens at $10 a million hold $0.082 of the $0.10.
    c.limits.daily_cost_usd = Some(0.1);
    let h = Harness::new(c);
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    let server = MockServer::start_with(move |_| {
        let mut r = openai_reply("answer", false, 100, 0, 10);
        if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            // The first call is slow: it is in flight while the other session calls.
            let body: Vec<u8> = r.chunks.concat();
            r.chunks = body
                .chunks(body.len() / 2 + 1)
                .map(<[u8]>::to_vec)
                .collect();
            r.pause = std::time::Duration::from_millis(1_500);
        }
        r
    })
    .await;
    let (_rt_a, a) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let (rt_b, b) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let mut rx = a.subscribe();
    a.submit(user("slow one")).await.unwrap();
    a.submit(Op::Resume).await.unwrap();
    while server.recorded().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        spent_today(&rt_b) >= 81_920,
        "the first call's hold counts at once"
    );
    run(&b, user("quick one")).await;
    let second = &server.recorded()[1].body;
    let bound = second["max_tokens"].as_u64().unwrap();
    assert!(
        bound < 2_000,
        "the second call got only what is left: {second}"
    );
    super::super::harness::collect(&mut rx).await;
    // Both charged, both holds gone: the day holds the two calls' cost, far below a hold.
    let day = spent_today(&rt_b);
    assert!(day < 10_000, "{day}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Red-team (issue 42): subagents side by side each saw the whole of a goal's cost budget
/// left, so together they could spend many times it. A call now sees what the turn's calls
/// in flight still hold: the first child, streaming slowly, holds about all that is left,
/// and the second is refused before it sends anything.
#[tokio::test]
async fn g_32_subagents_side_by_side_share_the_cost_budget_left() {
    use super::super::mock_server::{reply, reply_calls};
    let look = |what: &str| json!({"description": "look", "prompt": format!("Look at the {what}."), "agent": "explore"});
    let server = MockServer::start_with(move |r| {
        let body = r.body.to_string();
        if body.contains("You are a subagent") {
            let mut slow = reply(Flavor::OpenAi, "Report: fine.", None, 500).split_at(&[40]);
            slow.pause = std::time::Duration::from_millis(1500);
            slow
        } else if body.contains("tool_calls") {
            reply(Flavor::OpenAi, "done", None, 100)
        } else {
            reply_calls(
                Flavor::OpenAi,
                "Two at once.",
                &[("task", look("tests")), ("task", look("docs"))],
                100,
            )
        }
    })
    .await;
    let mut c = config(Verification::None);
    c.pricing.insert(
        "openai:*".into(),
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cached_input_per_mtok: None,
        },
    );
    let h = Harness::new(c);
    let (_rt, s) = on_mock(&h, Flavor::OpenAi, &server, |_| {});
    let ev = run(&s, user("/goal survey the project cost=$0.01")).await;
    let children = server
        .recorded()
        .iter()
        .filter(|r| r.body.to_string().contains("You are a subagent"))
        .count();
    assert_eq!(children, 1, "the second child sent a call past the budget");
    let tasks: Vec<_> = results(&ev).into_iter().filter(|r| r.0 == "task").collect();
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks
            .iter()
            .any(|t| t.1 != ToolStatus::Ok && t.2.contains("calls already under way")),
        "{tasks:?}"
    );
    s.shutdown().await.unwrap();
}

/// A subagent's model calls are the goal's cost, as its parent's are (issue 42): each call
/// costs $0.012, and the goal's cost is the parent's calls (one `assistant.message` each; the
/// goal may run more turns) and the child's one.
#[tokio::test]
async fn g_32_a_subagents_calls_count_in_the_goals_cost() {
    let h = Harness::new(priced(config(Verification::None)));
    let s = h.session(
        json!({"responses": [
            {"text": "handing over", "usage": call_usage(), "tool_calls": [{"name": "task",
                "arguments": {"description": "look", "prompt": "Look around.", "agent": "explore"}}]},
            {"text": "Child report: all fine.", "usage": call_usage()},
            {"text": "done", "usage": call_usage()}
        ], "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("/goal look around cost=$1")).await;
    let task = results(&ev).into_iter().find(|r| r.0 == "task").unwrap();
    assert_eq!(task.1, ToolStatus::Ok, "{task:?}");
    let parent_calls = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AssistantMessage { .. }))
        .count() as u64;
    let g = goal(&h, &s);
    assert_eq!(
        g.budget.cost.used,
        (parent_calls + 1) * 12_000,
        "{parent_calls} parent calls: {:?}",
        g.budget.cost
    );
    s.shutdown().await.unwrap();
}
