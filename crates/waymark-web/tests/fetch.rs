//! Web fetch against real local HTTP servers on 127.0.0.1 that count the connections they
//! take: what is listed comes back, what is not is refused before any connection, redirects
//! are checked hop by hop, and the body is cut at 5 MB. Loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use waymark_web::fetch::{MAX_BODY, Reach, fetch};
use waymark_web::page::to_text;
use waymark_web::target::check_url;

/// A local server answering every request with `answer(port)`, and its connection count.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
}

/// What a server sends back: a head and a body of `len` bytes of `fill`.
#[derive(Clone)]
struct Answer {
    head: String,
    body: Vec<u8>,
    /// Repeat `body` this many times (a big answer without holding it twice).
    times: usize,
}

impl Answer {
    fn page(content_type: &str, body: &str) -> Answer {
        Answer {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ),
            body: body.as_bytes().to_vec(),
            times: 1,
        }
    }

    fn redirect(to: &str) -> Answer {
        Answer {
            head: format!(
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
            body: Vec::new(),
            times: 1,
        }
    }
}

async fn serve(answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&got);
                let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                let a = answer(&path);
                if sock.write_all(a.head.as_bytes()).await.is_err() {
                    return;
                }
                for _ in 0..a.times {
                    if sock.write_all(&a.body).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Server { port, connections }
}

async fn get(url: &str, allow: &[String]) -> waymark_web::Result<waymark_web::fetch::Fetched> {
    let reach = Reach {
        redactor: None,
        allow_private: allow,
    };
    let checked = check_url(url, None, allow)?;
    fetch(checked, &reach, &CancellationToken::new()).await
}

const PAGE: &str = "<html><body><h1>Local docs</h1><p>Use <code>make</code>.</p></body></html>";

#[tokio::test]
async fn a_listed_local_page_comes_back_as_markdown() {
    let s = serve(|_| Answer::page("text/html; charset=utf-8", PAGE)).await;
    let allow = vec![format!("127.0.0.1:{}", s.port)];
    let f = get(&format!("http://127.0.0.1:{}/docs", s.port), &allow)
        .await
        .unwrap();
    assert_eq!(f.status, 200);
    let md = to_text(f.content_type.as_deref(), &f.body).unwrap();
    assert!(md.contains("# Local docs"), "{md}");
    assert!(md.contains("`make`"), "{md}");
    assert_eq!(s.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn loopback_is_refused_by_default_with_no_connection_made() {
    let s = serve(|_| Answer::page("text/plain", "hello")).await;
    for url in [
        format!("http://127.0.0.1:{}/", s.port),
        format!("http://localhost:{}/", s.port),
        format!("http://[::ffff:127.0.0.1]:{}/", s.port),
    ] {
        let e = get(&url, &[]).await.unwrap_err().to_string();
        assert!(e.contains("loopback"), "{url}: {e}");
    }
    // Listed on another port only.
    let e = get(
        &format!("http://127.0.0.1:{}/", s.port),
        &[format!("127.0.0.1:{}", s.port.wrapping_add(1))],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("web.allow_private"), "{e}");
    assert_eq!(
        s.connections.load(Ordering::SeqCst),
        0,
        "a connection was made"
    );
}

/// A name is looked up and its addresses checked before any connection: `localhost`
/// resolves to loopback and is refused, though it is a name and not an address.
#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_after_the_lookup() {
    let s = serve(|_| Answer::page("text/plain", "hello")).await;
    let e = get(&format!("http://localhost:{}/", s.port), &[])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("resolves to") && e.contains("loopback"), "{e}");
    assert_eq!(s.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_to_an_unlisted_port_is_refused_with_no_connection_to_it() {
    let b = serve(|_| Answer::page("text/plain", "private")).await;
    let to = format!("http://127.0.0.1:{}/secret", b.port);
    let a = serve(move |_| Answer::redirect(&to)).await;
    let allow = vec![format!("127.0.0.1:{}", a.port)];
    let e = get(&format!("http://127.0.0.1:{}/", a.port), &allow)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("redirect was refused"), "{e}");
    assert_eq!(a.connections.load(Ordering::SeqCst), 1);
    assert_eq!(b.connections.load(Ordering::SeqCst), 0, "B was reached");

    // Listed too, B is followed.
    let allow = vec![
        format!("127.0.0.1:{}", a.port),
        format!("127.0.0.1:{}", b.port),
    ];
    let f = get(&format!("http://127.0.0.1:{}/", a.port), &allow)
        .await
        .unwrap();
    assert_eq!(f.body, b"private");
    assert_eq!(f.url.port(), Some(b.port));
}

#[tokio::test]
async fn redirects_stop_after_five_and_another_host_is_not_followed() {
    let a = serve(|path| {
        let n: usize = path.trim_start_matches('/').parse().unwrap_or(0);
        Answer::redirect(&format!("/{}", n + 1))
    })
    .await;
    let allow = vec![format!("127.0.0.1:{}", a.port)];
    let e = get(&format!("http://127.0.0.1:{}/0", a.port), &allow)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 5 redirects"), "{e}");
    assert_eq!(a.connections.load(Ordering::SeqCst), 6);

    let away = serve(|_| Answer::redirect("https://example.com/elsewhere")).await;
    let allow = vec![format!("127.0.0.1:{}", away.port)];
    let f = get(&format!("http://127.0.0.1:{}/", away.port), &allow)
        .await
        .unwrap();
    assert_eq!(
        f.elsewhere.map(|u| u.to_string()).as_deref(),
        Some("https://example.com/elsewhere")
    );
}

#[tokio::test]
async fn a_50_mb_body_is_cut_at_5_mb() {
    let s = serve(|_| Answer {
        head: format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            50 * 1024 * 1024
        ),
        body: vec![b'x'; 1024 * 1024],
        times: 50,
    })
    .await;
    let allow = vec![format!("127.0.0.1:{}", s.port)];
    let f = get(&format!("http://127.0.0.1:{}/big", s.port), &allow)
        .await
        .unwrap();
    assert!(f.cut);
    assert_eq!(f.body.len(), MAX_BODY);
}

#[tokio::test]
async fn stop_ends_a_fetch_that_waits_for_an_answer() {
    // A server that takes the connection and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let allow = vec![format!("127.0.0.1:{port}")];
    let checked = check_url(&format!("http://127.0.0.1:{port}/"), None, &allow).unwrap();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        stopper.cancel();
    });
    let reach = Reach {
        redactor: None,
        allow_private: &allow,
    };
    let began = std::time::Instant::now();
    let e = fetch(checked, &reach, &cancel)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("stopped"), "{e}");
    assert!(began.elapsed() < std::time::Duration::from_secs(5));
}
