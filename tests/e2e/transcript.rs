//! The transcript as a developer reads it: agent replies as rendered Markdown with coloured
//! code (and model-written HTML inert), tool calls with readable arguments, an edit's diff,
//! a command's output and exit code, and the Changes tab listing every file changed.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn replies_render_as_markdown_and_tool_calls_show_diffs_output_and_changes() {
    let desk = Desk::start();
    let ws = workspace(&desk, "transcript");
    let out = desk.exec(
        &ws,
        &script("transcript.json"),
        &["--permission", "auto", "Add a greeting"],
    );
    succeeded(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // Markdown: a heading, a list, a table and a code block, coloured once it shows.
    app.wait_js(
        "return document.querySelector('[data-testid=markdown] h2')?.textContent === 'Done' || null",
        "the reply's heading rendered",
    )
    .await;
    let md = "[data-testid=markdown][data-rendered=yes]:has(h2)";
    assert!(app.exists(&format!("{md} li code")).await);
    assert!(app.exists(&format!("{md} table td")).await);
    app.wait_js(
        "return document.querySelector('[data-testid=markdown] pre code.hljs .hljs-keyword') ? true : null",
        "the code block coloured",
    )
    .await;
    // What the model wrote as HTML did nothing: no script, no handler ran, no remote image,
    // and the `javascript:` link is no link.
    let inert = app
        .js("const m = [...document.querySelectorAll('[data-testid=markdown]')].at(-1); \
             return { pwned: window.__pwned ?? null, script: !!m.querySelector('script'), img: !!m.querySelector('img'), \
                      handler: !!m.querySelector('[onerror],[onmouseover]'), js: [...m.querySelectorAll('a')].some(a => a.href.startsWith('javascript')) }")
        .await;
    assert_eq!(
        inert,
        serde_json::json!({"pwned": null, "script": false, "img": false, "handler": false, "js": false})
    );
    app.el("[data-testid=markdown] h2").await;
    app.shot("transcript-1-markdown").await;
    // A link the model wrote opens in the system browser; the window stays the app.
    app.click("[data-testid=markdown] a[href^='https://example.com']")
        .await;
    desk.wait_opened("https://example.com/docs?from=reply")
        .await;
    let url = app.client.current_url().await.unwrap();
    assert!(url.as_str().starts_with("tauri://localhost"), "{url}");

    // Tool calls read in words as what they did: paths under the workspace, the command, its
    // exit code.
    let args = app
        .js("return [...document.querySelectorAll('[data-testid=tool-call]')].map(t => t.dataset.tool + ': ' + t.querySelector('[data-testid=tool-headline]').textContent + ' | ' + t.querySelector('[data-testid=tool-status]').textContent)")
        .await;
    assert_eq!(
        args,
        serde_json::json!([
            "write: Wrote src/hello.rs | ok",
            "edit: Edited src/greet.sh | ok",
            "bash: Ran sh src/greet.sh Ada; exit 3 | exit 3"
        ])
    );
    // The edit's diff, line by line.
    app.click("[data-testid=tool-call][data-tool=edit] summary")
        .await;
    let diff = app
        .wait_text(
            "[data-testid=tool-call][data-tool=edit] [data-testid=tool-diff]",
            "Good morning",
        )
        .await;
    assert!(diff.contains("-echo \"Hello, ${1:-world}\""), "{diff}");
    assert!(
        diff.contains("+echo \"Good morning, ${1:-world}\""),
        "{diff}"
    );
    // The command's output without the exit-code line, which the status says.
    app.click("[data-testid=tool-call][data-tool=bash] summary")
        .await;
    let output = app
        .wait_text(
            "[data-testid=tool-call][data-tool=bash] [data-testid=tool-output]",
            "Good morning, Ada",
        )
        .await;
    assert!(!output.contains("[exit code"), "{output}");
    app.shot("transcript-2-tools").await;
    // The raw arguments are one click away.
    app.click("[data-testid=tool-call][data-tool=edit] [data-testid=tool-raw-toggle]")
        .await;
    app.wait_text(
        "[data-testid=tool-call][data-tool=edit] [data-testid=tool-raw]",
        "\"old_string\": \"Hello\"",
    )
    .await;

    // The Changes tab: both files, each with its diff.
    app.click("[data-testid=tab-changes]").await;
    app.wait_text("[data-testid=changes-count]", "2").await;
    let files = app
        .js("return [...document.querySelectorAll('[data-testid=changed-file] .path')].map(p => p.textContent)")
        .await;
    assert_eq!(files, serde_json::json!(["src/hello.rs", "src/greet.sh"]));
    app.click("[data-testid=changed-file] button").await;
    app.wait_text("[data-testid=changes] [data-testid=tool-diff]", "println!")
        .await;
    app.shot("transcript-3-changes").await;
    app.close().await;
}
