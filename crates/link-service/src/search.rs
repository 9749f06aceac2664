//! The dashboard's view of the links: every link matching a text (in its URL, title,
//! code or alias), a tag and a domain, sorted by creation time or clicks, a page at a time.
//! Shlink's and Dub's link lists do this with SQL; here the store is read in id order
//! and only the page asked for (plus what precedes it) is kept, in a bounded heap, so
//! memory stays `offset + limit` links whatever the store holds. The time is one pass
//! over the links (measured in `bench/links-search.sh`): narrow by tag at scale.

use crate::{LinkOpError, Links};
use shardkit_counters::Engine;
use shardkit_links::Link;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Most links before a page (`offset`): a dashboard pages forward a screen at a time.
pub const MAX_OFFSET: usize = 100_000;

/// Links read from the store per call while scanning.
const SCAN_PAGE: usize = 1_000;

/// What the links are ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Creation time (id order: time, then shard).
    Created,
    /// Clicks so far (ties newest first).
    Clicks,
}

/// A search: which links, in what order, which page.
#[derive(Debug, Clone)]
pub struct Search {
    /// Text the URL, code or alias contains (case ignored); empty: every link.
    pub text: String,
    /// Only links with this tag.
    pub tag: Option<String>,
    /// Only links of this domain (as stored: `Some(None)` the default domain).
    pub domain: Option<Option<String>>,
    /// Order.
    pub sort: SortBy,
    /// Largest first.
    pub descending: bool,
    /// Matching links skipped before the page.
    pub offset: usize,
    /// Links in the page.
    pub limit: usize,
}

/// One page of a search.
#[derive(Debug, Clone)]
pub struct Found {
    /// The page's links with their clicks, in order.
    pub links: Vec<(Link, u64)>,
    /// How many links match in all.
    pub total: usize,
}

/// A link placed for the heap: its sort key first, then its id (unique, so the order
/// is total and pages never repeat or skip a link).
struct Placed {
    key: (u64, u64),
    link: Link,
    /// Its clicks when they are the order (else read for the page only).
    clicks: u64,
}

impl PartialEq for Placed {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Placed {}
impl PartialOrd for Placed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Placed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

impl Search {
    /// Whether `link` matches the text, tag and domain.
    fn matches(&self, link: &Link, text: &str) -> bool {
        if self.tag.as_ref().is_some_and(|t| !link.tags.contains(t)) {
            return false;
        }
        if self.domain.as_ref().is_some_and(|d| *d != link.domain) {
            return false;
        }
        text.is_empty()
            || contains_ignoring_case(&link.code, text)
            || contains_ignoring_case(&link.url, text)
            || link
                .title
                .as_ref()
                .is_some_and(|t| contains_ignoring_case(t, text))
            || link
                .alias
                .as_ref()
                .is_some_and(|a| contains_ignoring_case(a, text))
    }

    /// Checks the page bounds, naming the parameter.
    pub fn check(&self, max_limit: usize) -> Result<(), LinkOpError> {
        if !(1..=max_limit).contains(&self.limit) {
            return Err(LinkOpError::Invalid(format!(
                "limit must be between 1 and {max_limit}, got {}",
                self.limit
            )));
        }
        if self.offset > MAX_OFFSET {
            return Err(LinkOpError::Invalid(format!(
                "offset must be at most {MAX_OFFSET}, got {}",
                self.offset
            )));
        }
        Ok(())
    }
}

/// Whether `haystack` contains `needle` (lowercase ASCII already), ASCII case ignored:
/// no lowercased copy of every link's URL.
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    needle.is_empty()
        || needle.len() <= haystack.len()
            && haystack
                .as_bytes()
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
}

impl Links {
    /// The page of `search` among the links `visible` lets through (an author-only key
    /// sees its own), with each link's clicks (blocking: reads the store and counters).
    pub fn search(
        &self,
        engine: &Engine,
        search: &Search,
        visible: impl Fn(&Link) -> bool,
    ) -> Result<Found, LinkOpError> {
        let text = search.text.trim().to_ascii_lowercase();
        let keep = search.offset + search.limit;
        // A max-heap of the `keep` first in the asked order: its top is the one to drop.
        let mut heap: BinaryHeap<Placed> = BinaryHeap::with_capacity(keep + 1);
        let mut flipped: BinaryHeap<Reverse<Placed>> = BinaryHeap::new();
        let mut total = 0usize;
        let mut after = None;
        loop {
            let page = self.store().list(search.tag.as_deref(), after, SCAN_PAGE)?;
            let full = page.len() == SCAN_PAGE;
            after = page.last().map(|l| l.id).or(after);
            for link in page {
                if !search.matches(&link, &text) || !visible(&link) {
                    continue;
                }
                total += 1;
                // Clicks are read for every match only when they are the order; else
                // for the page's links alone, below.
                let (primary, clicks) = match search.sort {
                    SortBy::Created => (link.created_at, 0),
                    SortBy::Clicks => {
                        let clicks = self.clicks.total(engine, link.id);
                        (clicks, clicks)
                    }
                };
                // Equal keys go by id, in the same direction.
                let placed = Placed {
                    key: (primary, link.id),
                    link,
                    clicks,
                };
                if search.descending {
                    // Keep the largest: a min-heap whose top is the smallest kept.
                    flipped.push(Reverse(placed));
                    if flipped.len() > keep {
                        flipped.pop();
                    }
                } else {
                    heap.push(placed);
                    if heap.len() > keep {
                        heap.pop();
                    }
                }
            }
            if !full {
                break;
            }
        }
        let mut ordered: Vec<Placed> = if search.descending {
            let mut v: Vec<Placed> = flipped.into_iter().map(|Reverse(p)| p).collect();
            v.sort_by(|a, b| b.cmp(a));
            v
        } else {
            heap.into_sorted_vec()
        };
        let links = ordered
            .drain(search.offset.min(ordered.len())..)
            .map(|p| match search.sort {
                SortBy::Created => {
                    let clicks = self.clicks.total(engine, p.link.id);
                    (p.link, clicks)
                }
                SortBy::Clicks => (p.link, p.clicks),
            })
            .collect();
        Ok(Found { links, total })
    }
}

#[cfg(test)]
mod tests {
    use super::contains_ignoring_case;

    #[test]
    fn text_is_found_whatever_its_case() {
        assert!(contains_ignoring_case(
            "https://Example.COM/a",
            "example.com"
        ));
        assert!(contains_ignoring_case("abc", ""));
        assert!(!contains_ignoring_case("ab", "abc"));
        assert!(!contains_ignoring_case("https://example.com/", "news"));
    }
}
