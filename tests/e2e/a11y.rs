//! Accessibility: axe-core (the npm package, as installed by `scripts/setup.sh`) checks the
//! main views inside the real window; none may have a serious or critical violation. Its
//! colour-contrast rule measures highlighted code and a diff in the light and the dark scheme.

use super::*;

impl App {
    /// Puts axe-core in the page, unless it is there already.
    async fn load_axe(&self) {
        let loaded = self
            .js("return typeof window.axe === 'object'")
            .await
            .as_bool()
            .unwrap_or(false);
        if !loaded {
            let source = std::fs::read_to_string(root().join("node_modules/axe-core/axe.min.js"))
                .expect("axe-core missing: scripts/setup.sh installs the npm packages");
            // Run as the WebDriver script itself: the page's policy allows no inline script
            // element, and its own code never loads axe.
            let script = format!("{source}\n;return typeof window.axe === 'object'");
            assert_eq!(self.js(&script).await, true, "axe-core did not load");
        }
    }

    /// Runs axe-core on the page as it is now; the serious and critical violations, each as
    /// "rule (impact): help — the elements".
    pub(crate) async fn axe(&self) -> Vec<String> {
        self.load_axe().await;
        let found = self
            .js_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { resultTypes: ['violations'] })
                   .then((r) => done(r.violations
                     .filter((v) => v.impact === 'serious' || v.impact === 'critical')
                     .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 4).map((n) => n.target.join(' ')).join(', ')}`)))
                   .catch((e) => done([`axe failed: ${e}`]));",
            )
            .await;
        serde_json::from_value(found).unwrap()
    }

    /// What axe-core's colour-contrast rule makes of the element `css`: the elements it
    /// measured (class names, contrast ratio), and each element it failed or left undecided.
    /// The element is first brought to the middle of its scroller: axe passes an element out
    /// of sight without measuring it.
    async fn contrast_in(&self, css: &str) -> (Vec<(String, f64)>, Vec<String>) {
        self.load_axe().await;
        let found = self
            .js_async(&format!(
                "const done = arguments[arguments.length - 1];
                 const el = document.querySelector({css:?});
                 if (!el) {{ done([[], ['no element {css}']]); return; }}
                 el.scrollIntoView({{ block: 'center' }});
                 setTimeout(() => axe.run(el, {{ runOnly: ['color-contrast'], elementRef: true }})
                   .then((r) => done([
                     r.passes.flatMap((v) => v.nodes)
                       .filter((n) => typeof n.any[0]?.data?.contrastRatio === 'number')
                       .map((n) => [n.element.className, n.any[0].data.contrastRatio]),
                     [...r.violations, ...r.incomplete].flatMap((v) => v.nodes)
                       .map((n) => `${{n.target.join(' ')}}: ${{n.failureSummary}}`),
                   ]))
                   .catch((e) => done([[], [`axe failed: ${{e}}`]])), 100);"
            ))
            .await;
        serde_json::from_value(found).unwrap()
    }

    /// The serious and critical violations of the view `name`, each prefixed with it (after
    /// a screenshot).
    pub(crate) async fn violations(&self, name: &str) -> Vec<String> {
        let found = self.axe().await;
        self.shot(&format!("a11y-{name}")).await;
        found.into_iter().map(|v| format!("{name}: {v}")).collect()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_main_views_have_no_serious_accessibility_violations() {
    let desk = Desk::start();
    let app = desk.launch().await;
    let mut found = Vec::new();
    app.el("[data-testid=setup-card]").await;
    found.extend(app.violations("setup-card").await);

    // The demo: a goal session (gauges, timeline) and a plan review.
    app.start_demo().await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "blocked").await;
    found.extend(app.violations("goal-tab").await);
    app.open_plan_demo().await;
    app.el("[data-testid=approval-bar]").await;
    app.wait_text("[data-testid=plan-doc]", "Risks").await;
    found.extend(app.violations("plan-review").await);
    app.click("[data-testid=comment-mode]").await;
    app.wait_text("[data-testid=plan-lines]", "Run the test")
        .await;
    app.click("[data-testid=line-7]").await;
    found.extend(app.violations("plan-comments").await);
    app.click("[data-testid=focus-review]").await;
    found.extend(app.violations("focus-review").await);
    app.click("[data-testid=focus-review]").await;

    // Approved, the implementation asks before the test run: the permission dialog.
    app.click("[data-testid=approve]").await;
    app.el("[data-testid=question-dialog]").await;
    found.extend(app.violations("permission-dialog").await);
    // Nothing draws over the question: not the side panel, not a toast.
    let covered = app
        .js("const d = document.querySelector('[data-testid=question-dialog]').closest('.backdrop'); \
             const over = ['[data-testid=side-panel]', '[data-testid=toast]'].map((s) => document.querySelector(s)).filter(Boolean).map((e) => { e.style.pointerEvents = 'auto'; const r = e.getBoundingClientRect(); return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); }); \
             return over.every((e) => e && d.contains(e))")
        .await;
    assert_eq!(covered, true, "something draws over the question dialog");
    app.click("[data-testid=allow-once]").await;
    app.wait_text("[data-testid=transcript]", "the test passes")
        .await;
    app.click("[data-testid=tab-changes]").await;
    found.extend(app.violations("transcript-and-changes").await);

    // Settings.
    app.click("[data-testid=open-settings]").await;
    app.el("[data-testid=settings-save]").await;
    found.extend(app.violations("settings").await);
    app.close().await;
    assert!(found.is_empty(), "{found:#?}");
}

/// Highlighted code and an edit's diff, in the light and the dark scheme (the GTK theme
/// decides `prefers-color-scheme`): axe-core's colour-contrast rule measures every kind of
/// token and of diff line and fails none, and the page has no serious or critical violation.
#[tokio::test(flavor = "multi_thread")]
async fn highlighted_code_and_diffs_are_readable_in_light_and_dark() {
    let desk = Desk::start();
    let ws = workspace(&desk, "colours");
    std::fs::write(
        ws.join("src/lib.rs"),
        "/// Says hello.\npub fn greet(name: &str) -> String {\n    \
         format!(\"Hello, {name}!\")\n}\n",
    )
    .unwrap();
    let out = desk.exec(
        &ws,
        &script("code_colours.json"),
        &["--permission", "auto", "Say good morning"],
    );
    succeeded(&out);

    let code = "[data-testid=markdown] pre code.hljs";
    let edit = "[data-testid=tool-call][data-tool=edit]";
    let diff = format!("{edit} [data-testid=tool-diff]");
    // The class names each kind of element carries; each must be measured.
    let tokens = [
        "hljs-keyword",
        "hljs-string",
        "hljs-number",
        "hljs-comment",
        "hljs-title",
        "hljs-type",
        "hljs-meta",
    ];
    let lines = ["add", "del", "hunk"];
    let mut found = Vec::new();
    for (scheme, theme) in [("light", "Adwaita"), ("dark", "Adwaita:dark")] {
        let app = desk.launch_with(&[("GTK_THEME", theme)]).await;
        let dark = app
            .js("return matchMedia('(prefers-color-scheme: dark)').matches")
            .await;
        assert_eq!(dark, scheme == "dark", "GTK_THEME={theme} is not {scheme}");
        app.el("[data-testid=session].current").await;
        app.wait_js(
            &format!("return document.querySelector('{code} .hljs-string') ? true : null"),
            "the code block coloured",
        )
        .await;
        if !app.exists(&diff).await {
            app.click(&format!("{edit} summary")).await;
        }
        app.wait_text(&diff, "Good morning").await;

        for (css, kinds) in [(code, &tokens[..]), (diff.as_str(), &lines[..])] {
            let (measured, problems) = app.contrast_in(css).await;
            found.extend(problems.into_iter().map(|p| format!("{scheme}: {p}")));
            for kind in kinds {
                if !measured
                    .iter()
                    .any(|(class, _)| class.split_whitespace().any(|c| c == *kind))
                {
                    found.push(format!(
                        "{scheme}: no .{kind} measured in {css}; measured {measured:?}"
                    ));
                }
            }
        }
        found.extend(app.violations(&format!("code-and-diff-{scheme}")).await);
        app.close().await;
    }
    assert!(found.is_empty(), "{found:#?}");
}
