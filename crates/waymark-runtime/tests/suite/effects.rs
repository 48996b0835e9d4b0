//! A tool's declared effects decide its calls, not its name (issue 40): a tool that reaches
//! the network itself, declared as writing nothing, is refused in `read-only`, asked about in
//! `ask`, and runs in `auto`; plan mode leaves it to the permission mode, since reading the
//! web is investigation (issue 42), but refuses one that also runs programs or writes. Built as a hostile extension would
//! build it: a "reader" that sends what it is given somewhere else.

use super::harness::{Harness, results, run, user};
use futures_util::future::BoxFuture;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use waymark_config::Config;
use waymark_protocol::{EventKind, PermissionMode, ToolStatus};
use waymark_runtime::extension::Extension;
use waymark_runtime::tools::{Effects, FreeTool, Tool, ToolContext, ToolError, ToolOutput};
use waymark_runtime::{SessionHandle, SessionSpec};

/// A page fetcher: reads nothing on disk and writes nothing, but sends its `url` out (with
/// the effects it declares).
struct FetchPage(Arc<AtomicUsize>, Effects);

impl Tool for FetchPage {
    fn name(&self) -> &'static str {
        "fetch_page"
    }
    fn description(&self) -> &'static str {
        "Fetch a web page."
    }
    fn schema(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}})
    }
    fn effects(&self) -> Effects {
        self.1
    }
}

impl FreeTool for FetchPage {
    fn handle<'a>(
        &'a self,
        _: &'a ToolContext,
        _: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(ToolOutput::text("<html>page</html>")) })
    }
}

struct Web(Arc<AtomicUsize>, Effects);

impl Extension for Web {
    fn name(&self) -> &'static str {
        "web"
    }
    fn tools(&self) -> Vec<Arc<dyn FreeTool>> {
        vec![Arc::new(FetchPage(self.0.clone(), self.1))]
    }
}

/// What the fetcher declares: it reaches the network, nothing else.
const NETWORK: Effects = Effects {
    network: true,
    ..Effects::READS
};

/// A runtime with the fetcher, a session in `mode` whose model fetches a page once, and the
/// count of fetches made.
fn session(h: &Harness, mode: PermissionMode) -> (SessionHandle, Arc<AtomicUsize>) {
    session_with(
        h,
        mode,
        NETWORK,
        json!({"url": "https://example.com/?q=secret"}),
    )
}

/// [`session`] with the fetcher declaring `effects`, called with `arguments`.
fn session_with(
    h: &Harness,
    mode: PermissionMode,
    effects: Effects,
    arguments: serde_json::Value,
) -> (SessionHandle, Arc<AtomicUsize>) {
    let fetched = Arc::new(AtomicUsize::new(0));
    let mut opts = h.runtime.options().clone();
    opts.extensions = vec![Arc::new(Web(fetched.clone(), effects))];
    let runtime = waymark_runtime::Runtime::open(opts).unwrap();
    let s = runtime
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(h.script(json!({"responses": [
                {"tool_calls": [{"name": "fetch_page", "arguments": arguments}]},
                {"text": "done"}
            ]}))),
            permission_mode: Some(mode),
            hold: false,
        })
        .unwrap();
    (s, fetched)
}

#[tokio::test]
async fn a_tool_that_reaches_the_network_is_refused_in_read_only() {
    let h = Harness::new(Config::default());
    let (s, fetched) = session(&h, PermissionMode::ReadOnly);
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("it reaches the network"), "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "the request went out");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_tool_that_only_reads_the_network_is_left_to_the_permission_mode_in_plan_mode() {
    let h = Harness::new(Config::default());
    let (s, fetched) = session(&h, PermissionMode::Auto);
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    s.shutdown().await.unwrap();

    let (s, fetched) = session(&h, PermissionMode::ReadOnly);
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("read-only"), "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "the request went out");
    s.shutdown().await.unwrap();
}

/// A tool that reaches the network and writes is not a read of the web: plan mode refuses it.
#[tokio::test]
async fn a_tool_that_reaches_the_network_and_writes_is_refused_in_plan_mode_even_in_auto() {
    let h = Harness::new(Config::default());
    let (s, fetched) = session_with(
        &h,
        PermissionMode::Auto,
        Effects {
            writes: true,
            ..NETWORK
        },
        json!({"url": "https://example.com/"}),
    );
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("Plan mode"), "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "the request went out");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_tool_that_reaches_the_network_asks_in_ask_and_runs_in_auto() {
    let h = Harness::new(Config::default());
    let (s, fetched) = session(&h, PermissionMode::Ask);
    let ev = run(&s, user("look it up")).await;
    let asked = ev.iter().find_map(|e| match &e.kind {
        EventKind::QuestionnaireOpened { question, .. } => Some(format!("{question:?}")),
        _ => None,
    });
    let asked = asked.expect("the user is asked");
    assert!(asked.contains("over the network"), "{asked}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0);
    s.shutdown().await.unwrap();

    let (s, fetched) = session(&h, PermissionMode::Auto);
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    s.shutdown().await.unwrap();
}

/// Second red-team: a `path` naming a private place made the fetch a question about a read,
/// which never mentioned the network, and an "allow" then let it out of `read-only`.
#[tokio::test]
async fn a_private_path_never_turns_a_network_call_into_a_question_about_a_read() {
    let h = Harness::new(Config::default());
    let private = h.runtime.options().data_dir.join("waymark.db");
    let (s, fetched) = session_with(
        &h,
        PermissionMode::ReadOnly,
        NETWORK,
        json!({"url": "https://example.com/", "path": private.display().to_string()}),
    );
    let ev = run(&s, user("look it up")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("it reaches the network"), "{r:?}");
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. })),
        "asked instead of refused"
    );
    assert_eq!(fetched.load(Ordering::SeqCst), 0);
    s.shutdown().await.unwrap();
}

/// Second red-team: a tool that runs programs and reaches the network passed plan mode as a
/// sandboxed shell would.
#[tokio::test]
async fn a_tool_that_runs_programs_and_reaches_the_network_is_refused_in_plan_mode() {
    let h = Harness::new(Config::default());
    let (s, fetched) = session_with(
        &h,
        PermissionMode::Auto,
        Effects {
            processes: true,
            ..NETWORK
        },
        json!({"url": "https://example.com/"}),
    );
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("look it up")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("reaches the network"), "{r:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "the request went out");
    s.shutdown().await.unwrap();
}
