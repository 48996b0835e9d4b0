//! What the model sees of a session's history: the rows read so far (topped up before each
//! model call), their size estimates and running total, and the newest compaction that
//! stands in for the rows before it.

use crate::error::Result;
use crate::store::{self, Store};

/// Conversation items already read from the store: what the model sees of the history.
/// After a compaction, item 0 is its summary (row id 0) and the rows it covers are left out.
#[derive(Default)]
pub(crate) struct HistoryCache {
    last_id: i64,
    loaded: bool,
    pub items: Vec<(Option<i64>, store::HistoryItem)>,
    /// Each item's row id (0 for the summary) and size estimate; `total` is their sum.
    pub ids: Vec<i64>,
    pub tokens: Vec<u64>,
    pub total: u64,
    /// The compaction whose summary is item 0.
    pub compaction: Option<store::compactions::CompactionRow>,
    /// Every wire id the conversation has used, so a provider cannot reuse one.
    pub(crate) wire_ids: std::collections::HashSet<String>,
    /// The provider's reported input tokens over our estimate, for the last request (0: none
    /// seen yet, taken as 1).
    ratio: f64,
}

impl HistoryCache {
    fn push(&mut self, id: i64, turn: Option<i64>, item: store::HistoryItem) {
        let t = crate::compaction::item_tokens(&item);
        self.total = self.total.saturating_add(t);
        self.ids.push(id);
        self.tokens.push(t);
        self.items.push((turn, item));
    }

    /// The correction applied to our estimates.
    pub fn ratio(&self) -> f64 {
        if self.ratio > 0.0 { self.ratio } else { 1.0 }
    }
}

/// The session's conversation as the model sees it: one part of the session core, the
/// rows read so far and their estimates, behind a lock.
#[derive(Default)]
pub(crate) struct Conversation(std::sync::Mutex<HistoryCache>);

impl Conversation {
    fn lock(&self) -> std::sync::MutexGuard<'_, HistoryCache> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The conversation cache of session `id`, after reading the rows added since last time.
    pub(crate) fn cache(
        &self,
        store: &Store,
        id: &str,
    ) -> Result<std::sync::MutexGuard<'_, HistoryCache>> {
        let mut cache = self.lock();
        if !cache.loaded {
            cache.loaded = true;
            if let Some(row) =
                store.read(|c| Ok::<_, crate::Error>(store::compactions::latest(c, id)?))?
            {
                let text = crate::compaction::message(&row);
                cache.last_id = row.upto;
                let item = store::HistoryItem::User {
                    text,
                    source: waymark_protocol::MessageSource::System,
                    images: Vec::new(),
                };
                cache.push(0, None, item);
                cache.compaction = Some(row);
            }
        }
        let after = cache.last_id;
        let fresh =
            store.read(|c| Ok::<_, crate::Error>(store::turns::history_after(c, id, after)?))?;
        for (id, turn, item) in fresh {
            cache.last_id = id;
            if let store::HistoryItem::Assistant { tool_calls, .. } = &item {
                for c in tool_calls {
                    cache.wire_ids.insert(c.wire().to_string());
                }
            }
            cache.push(id, turn, item);
        }
        Ok(cache)
    }

    /// Forgets the loaded history (after a compaction): the next read starts from the newest
    /// compaction. The estimate's correction is kept.
    pub(crate) fn reset(&self) {
        let mut cache = self.lock();
        let ratio = cache.ratio;
        *cache = HistoryCache {
            ratio,
            ..HistoryCache::default()
        };
    }

    /// Learns from a reply how our estimate of a request (`estimated`, uncorrected) compares
    /// with the input tokens the provider reported.
    pub(crate) fn observe_input(&self, estimated: u64, reported: u64) {
        if estimated == 0 || reported == 0 {
            return;
        }
        self.lock().ratio = (reported as f64 / estimated as f64).clamp(0.5, 3.0);
    }

    /// After a provider refused a request as too long: estimate higher from now on.
    pub(crate) fn underestimated(&self) {
        let mut cache = self.lock();
        cache.ratio = (cache.ratio() * 1.25).min(3.0);
    }

    /// Runs `f` on the items as loaded, without reading the store.
    pub(crate) fn with_loaded<T>(
        &self,
        f: impl FnOnce(&[(Option<i64>, store::HistoryItem)]) -> T,
    ) -> T {
        f(&self.lock().items)
    }
}
