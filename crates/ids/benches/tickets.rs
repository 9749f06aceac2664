//! Ticket segment allocation: numbers per second from memory, and how many durable
//! (fsynced) writes a million numbers cost, with the default options.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shardkit_ids::tickets::{EmbeddedTicketStore, SegmentAllocator, SegmentOptions, SequenceSpec};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn tickets(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedTicketStore::open(dir.path().join("tickets.redb")).unwrap());

    // Durable writes per million numbers, printed once outside the timed loop.
    let allocator = SegmentAllocator::new(
        Arc::clone(&store),
        "count",
        SequenceSpec::default(),
        SegmentOptions::default(),
    )
    .unwrap();
    let before = store.durable_writes();
    let started = Instant::now();
    for _ in 0..1_000_000 {
        black_box(allocator.next().unwrap());
    }
    let elapsed = started.elapsed();
    println!(
        "tickets/durable_writes_per_million: {} (1,000,000 numbers in {:.1} ms, final step {})",
        store.durable_writes() - before,
        elapsed.as_secs_f64() * 1e3,
        allocator.step()
    );

    let mut group = c.benchmark_group("tickets");
    group.measurement_time(Duration::from_secs(3));
    let allocator = SegmentAllocator::new(
        Arc::clone(&store),
        "photos",
        SequenceSpec::default(),
        SegmentOptions::default(),
    )
    .unwrap();
    group.throughput(Throughput::Elements(1));
    group.bench_function("segment_next", |b| {
        b.iter(|| black_box(allocator.next().unwrap()))
    });
    group.throughput(Throughput::Elements(1000));
    group.bench_function("segment_take_1000", |b| {
        b.iter(|| black_box(allocator.take(1000).unwrap()))
    });
    group.throughput(Throughput::Elements(1));
    let raw = Arc::clone(&store);
    use shardkit_ids::tickets::TicketStore;
    group.sample_size(20);
    group.bench_function("store_reserve_fsync_per_number", |b| {
        b.iter(|| black_box(raw.reserve("raw", SequenceSpec::default(), 1).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, tickets);
criterion_main!(benches);
