//! PM-24 renderer benchmark: a 512 KiB plan through pulldown-cmark alone and through the full
//! sanitized renderer (target ≤ 15 ms and ≤ 4× the raw parse).

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use waymark_runtime::plan::render::{markdown_to_html, render};

/// A realistic plan of about 512 KiB: sections with prose, lists, task lists, tables, code.
fn plan_512k() -> String {
    let mut s = String::from(
        "## Summary\n\nRework the storage layer so that sessions open in constant time.\n\n",
    );
    let mut i = 0;
    while s.len() < 512 * 1024 {
        i += 1;
        s.push_str(&format!(
            "## Step {i}: update `module_{i}`\n\n\
             The current code in `src/module_{i}.rs` reads **every** row on open; we change it to read *only* the \
             header and fetch the rest lazily. See [the design](https://example.com/design#{i}) and the note[^n{i}].\n\n\
             - [x] read the existing tests\n- [ ] add a lazy loader\n- [ ] migrate callers (~~old API~~ new API)\n\n\
             | file | change | risk |\n|---|---|---|\n| src/module_{i}.rs | lazy header | low |\n| tests/module_{i}.rs | new cases | low |\n\n\
             ```rust\nfn open_{i}(path: &Path) -> Result<Store> {{\n    let header = read_header(path)?;\n    Ok(Store::lazy(header))\n}}\n```\n\n\
             > [!NOTE]\n> Keep the old loader behind a flag for one release.\n\n[^n{i}]: Measured on the 10k-event fixture.\n\n"
        ));
    }
    s
}

fn bench(c: &mut Criterion) {
    let plan = plan_512k();
    c.bench_function("plan/pulldown_cmark_512k", |b| {
        b.iter(|| markdown_to_html(black_box(&plan)))
    });
    c.bench_function("plan/render_sanitized_512k", |b| {
        b.iter(|| render(black_box(&plan)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
