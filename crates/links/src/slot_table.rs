//! The offset index's slots held in memory, packed, within a byte budget.
//!
//! Exists because a redirect that misses every cache used to make two `pread`s, one for
//! its slot in `index-gNN` and one for its record, and on two cores each system call is
//! also where the load generator takes the CPU (bench/notes/runs.md). Holding the
//! slots in the process makes it one. Whole, they are 8 bytes a link (800 MB at 100 M);
//! packed they are 144 bytes a block of 64 slots of a group, about 2.25 bytes a link:
//! the location of a block's first record, then for each slot the gap from the record
//! before it (16 bits; 0 is an empty slot), and one step of any size (see [`Packed`]).
//! A group's records are appended in the order of their numbers, each behind the other
//! groups' records written between them, so a block with two steps past 65,534 bytes,
//! or two records placed before their predecessors (replaced links), is rare; such a
//! block is kept whole (8 bytes a slot).
//!
//! Each of the 64 groups may use 1/64 of the budget. A slot the table does not hold (a
//! group past its share, a block past the held ones) is read from the file as before, so
//! the budget bounds memory and never correctness. The table mirrors the files: it is
//! loaded from them once the store is open and changed with them in one lock.

use std::collections::HashMap;

/// Slots in a block.
const BLOCK: usize = 64;
/// `base` of a block kept whole in [`GroupSlots::whole`].
const WHOLE: u64 = u64::MAX;
/// `base` of a block the table does not hold (its share was used up).
const UNHELD: u64 = u64::MAX - 1;
/// Bytes a packed block takes.
const PACKED_BYTES: usize = std::mem::size_of::<Packed>();
/// Bytes a whole block takes beyond its packed entry (its 512 bytes, the map's entry
/// and the allocator's header, rounded up).
const WHOLE_BYTES: usize = 8 * BLOCK + 48;
/// How far past its held blocks a group's table grows for one new slot: a generated
/// code takes the next number of its group, so a slot further out (an imported code
/// of a foreign key) is left to the file rather than paid for with empty blocks.
const GROWTH_BLOCKS: usize = 16;

/// The gap of the block's one slot whose location is `far` rather than a gap away.
const FAR: u16 = u16::MAX;

/// 64 slots: a slot's location is `base` plus the sum of the gaps up to it, or, from
/// the one slot whose gap is [`FAR`] on, `far` plus the sum of the gaps after that
/// slot. The one far step covers the common break in a group's run: a bulk import
/// writes a batch's records group by group (steps of ~150 bytes, then one of the whole
/// batch, often past 64 KiB: 39% of the blocks of a 10 M import had exactly one, none
/// had two), a replaced link, the next segment.
#[derive(Clone, Copy)]
struct Packed {
    base: u64,
    far: u64,
    gaps: [u16; BLOCK],
}

impl Packed {
    const EMPTY: Packed = Packed {
        base: 0,
        far: 0,
        gaps: [0; BLOCK],
    };

    /// Slot `i`'s location (0: none).
    fn get(&self, i: usize) -> u64 {
        if self.gaps[i] == 0 {
            return 0;
        }
        let upto = &self.gaps[..=i];
        let (from, gaps) = match upto.iter().rposition(|&g| g == FAR) {
            Some(j) => (self.far, &upto[j + 1..]),
            None => (self.base, upto),
        };
        // At most 64 gaps of 16 bits: the sum fits 32.
        let sum: u32 = gaps.iter().map(|&g| u32::from(g)).sum();
        from + u64::from(sum)
    }

    /// Every slot's location.
    fn unpack(&self) -> [u64; BLOCK] {
        let mut slots = [0; BLOCK];
        let mut at = self.base;
        for (slot, &gap) in slots.iter_mut().zip(&self.gaps) {
            match gap {
                0 => continue,
                FAR => at = self.far,
                _ => at += u64::from(gap),
            }
            *slot = at;
        }
        slots
    }

    /// `slots` packed, if their locations rise in slot order by less than 65,535 bytes
    /// each but for at most one step (any size, either way).
    fn pack(slots: &[u64; BLOCK]) -> Option<Packed> {
        let mut packed = Packed::EMPTY;
        let mut prev = None;
        for (gap, &loc) in packed.gaps.iter_mut().zip(slots) {
            if loc == 0 {
                continue;
            }
            let from = match prev {
                Some(p) => p,
                None => {
                    packed.base = loc - 1;
                    loc - 1
                }
            };
            match loc
                .checked_sub(from)
                .filter(|&s| (1..u64::from(FAR)).contains(&s))
            {
                Some(step) => *gap = step as u16,
                None if packed.far == 0 => {
                    packed.far = loc;
                    *gap = FAR;
                }
                None => return None,
            }
            prev = Some(loc);
        }
        (packed.base < UNHELD).then_some(packed)
    }
}

/// One group's held blocks.
#[derive(Default)]
struct GroupSlots {
    blocks: Vec<Packed>,
    whole: HashMap<usize, Box<[u64; BLOCK]>>,
    /// Bytes of `blocks` and `whole`.
    bytes: usize,
}

impl GroupSlots {
    /// Stores `slots` as block `b` (the next one or one already held), packed, else
    /// whole, else not held when that passes `share`.
    fn put(&mut self, b: usize, slots: &[u64; BLOCK], share: usize) {
        let was_whole = self.whole.remove(&b).is_some();
        if was_whole {
            self.bytes -= WHOLE_BYTES;
        }
        let entry = match Packed::pack(slots) {
            Some(packed) => packed,
            None if self.bytes + WHOLE_BYTES <= share => {
                self.whole.insert(b, Box::new(*slots));
                self.bytes += WHOLE_BYTES;
                Packed {
                    base: WHOLE,
                    ..Packed::EMPTY
                }
            }
            None => Packed {
                base: UNHELD,
                ..Packed::EMPTY
            },
        };
        if b == self.blocks.len() {
            self.blocks.push(entry);
            self.bytes += PACKED_BYTES;
        } else {
            self.blocks[b] = entry;
        }
    }

    /// Slot `i` of block `b`: `None` when not held.
    fn get(&self, b: usize, i: usize) -> Option<u64> {
        let block = self.blocks.get(b)?;
        match block.base {
            UNHELD => None,
            WHOLE => self.whole.get(&b).map(|slots| slots[i]),
            _ => Some(block.get(i)),
        }
    }

    /// Every slot of block `b`: `None` when not held.
    fn slots(&self, b: usize) -> Option<[u64; BLOCK]> {
        let block = self.blocks.get(b)?;
        match block.base {
            UNHELD => None,
            WHOLE => self.whole.get(&b).map(|slots| **slots),
            _ => Some(block.unpack()),
        }
    }
}

/// The slots of the 64 groups that fit the budget.
pub(crate) struct SlotTable {
    groups: Vec<GroupSlots>,
    /// Bytes each group may use.
    share: usize,
}

impl SlotTable {
    /// A table of `budget` bytes (0 holds nothing).
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            groups: (0..64).map(|_| GroupSlots::default()).collect(),
            share: budget / 64,
        }
    }

    /// `key`'s location (0: none), or `None` when the table does not hold its slot.
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        let n = usize::try_from(key >> 6).ok()?;
        self.groups[(key & 63) as usize].get(n / BLOCK, n % BLOCK)
    }

    /// Sets `key`'s slot to `loc` (0: none); see [`SlotTable::set_all`].
    #[cfg(test)]
    pub(crate) fn set(&mut self, key: u64, loc: u64) {
        self.set_all(&[(key, loc)]);
    }

    /// Sets each `(key, location)` slot (0: none) the table holds, or that is at most
    /// [`GROWTH_BLOCKS`] past its group's held blocks while the share allows; a run of
    /// slots in one block (a batch's, in key order) unpacks and packs that block once.
    pub(crate) fn set_all(&mut self, updates: &[(u64, u64)]) {
        let block_of = |key: u64| (key & 63, (key >> 6) / BLOCK as u64);
        let mut i = 0;
        while i < updates.len() {
            let here = block_of(updates[i].0);
            let mut j = i + 1;
            while j < updates.len() && block_of(updates[j].0) == here {
                j += 1;
            }
            self.set_block(&updates[i..j]);
            i = j;
        }
    }

    /// [`SlotTable::set_all`] for updates that all fall in one block.
    fn set_block(&mut self, updates: &[(u64, u64)]) {
        let Ok(n) = usize::try_from(updates[0].0 >> 6) else {
            return;
        };
        let b = n / BLOCK;
        let share = self.share;
        let group = &mut self.groups[(updates[0].0 & 63) as usize];
        let mut slots = match group.slots(b) {
            Some(slots) => slots,
            None if b >= group.blocks.len()
                && b < group.blocks.len() + GROWTH_BLOCKS
                && group.bytes + (b + 1 - group.blocks.len()) * PACKED_BYTES <= share =>
            {
                while group.blocks.len() < b {
                    group.put(group.blocks.len(), &[0; BLOCK], share);
                }
                [0; BLOCK]
            }
            None => return,
        };
        for &(key, loc) in updates {
            slots[(key >> 6) as usize % BLOCK] = loc;
        }
        group.put(b, &slots, share);
    }

    /// Holds the slots of `group` read from its file, `slots` starting at block `b`
    /// (whole blocks; a short last one is padded with empty slots); stops at the share.
    pub(crate) fn load(&mut self, group: usize, b: usize, slots: &[u64]) {
        let share = self.share;
        let group = &mut self.groups[group];
        for (k, chunk) in slots.chunks(BLOCK).enumerate() {
            if b + k != group.blocks.len() || group.bytes + PACKED_BYTES > share {
                return;
            }
            let mut block = [0; BLOCK];
            block[..chunk.len()].copy_from_slice(chunk);
            group.put(b + k, &block, share);
        }
    }

    /// Whether `group` may hold another block.
    pub(crate) fn has_room(&self, group: usize) -> bool {
        self.groups[group].bytes + PACKED_BYTES <= self.share
    }

    /// Bytes held, and the budget.
    pub(crate) fn usage(&self) -> (usize, usize) {
        let used = self.groups.iter().map(|g| g.bytes).sum();
        (used, self.share * 64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: u64, n: u64) -> u64 {
        n << 6 | group
    }

    #[test]
    fn appended_slots_pack_to_about_two_bytes_and_read_back() {
        let mut table = SlotTable::new(64 << 20);
        let mut loc = 8;
        for n in 0..10_000u64 {
            loc += 70 + (n * 7919) % 9000; // gaps of 70 to 9,069 bytes
            table.set(key(5, n), loc);
        }
        let mut loc = 8;
        for n in 0..10_000u64 {
            loc += 70 + (n * 7919) % 9000;
            assert_eq!(table.get(key(5, n)), Some(loc));
        }
        assert_eq!(table.get(key(5, 10_000)), Some(0), "held block, empty slot");
        assert_eq!(table.get(key(5, 64 * 500)), None, "past the held blocks");
        assert_eq!(table.get(key(6, 0)), None, "a group with nothing held");
        let (used, budget) = table.usage();
        assert_eq!(budget, 64 << 20);
        assert_eq!(used, 10_048 / 64 * PACKED_BYTES);
        assert!(used * 100 / 10_000 < 230, "{used} bytes for 10,000 slots");
    }

    #[test]
    fn a_slot_out_of_order_or_far_off_keeps_its_block_whole_and_empty_slots_read_none() {
        let mut table = SlotTable::new(64 << 20);
        for n in 0..64u64 {
            table.set(key(1, n), 1000 + n * 100);
        }
        // Replaced: a later record, out of order (its step and the next one's: two).
        table.set(key(1, 10), 5_000_000);
        table.set(key(1, 20), 0); // deleted
        assert_eq!(table.get(key(1, 10)), Some(5_000_000));
        assert_eq!(table.get(key(1, 20)), Some(0));
        assert_eq!(table.get(key(1, 63)), Some(1000 + 63 * 100));
        assert_eq!(table.groups[1].whole.len(), 1);
        table.set(key(1, 64), 1u64 << 40 | 8); // the next segment: a gap past 16 bits
        assert_eq!(table.get(key(1, 64)), Some(1u64 << 40 | 8));
        assert_eq!(table.groups[1].whole.len(), 1, "alone in its block: packed");
        table.set(key(1, 65), (1u64 << 40) + 100_000); // one far step: still packed
        table.set(key(1, 66), (1u64 << 40) + 100_100);
        assert_eq!(table.get(key(1, 65)), Some((1u64 << 40) + 100_000));
        assert_eq!(table.get(key(1, 66)), Some((1u64 << 40) + 100_100));
        assert_eq!(table.groups[1].whole.len(), 1);
        table.set(key(1, 67), (1u64 << 40) + 300_000); // a second one: whole
        assert_eq!(table.get(key(1, 67)), Some((1u64 << 40) + 300_000));
        assert_eq!(table.get(key(1, 66)), Some((1u64 << 40) + 100_100));
        assert_eq!(table.groups[1].whole.len(), 2);
    }

    #[test]
    fn the_budget_bounds_every_group_and_what_is_not_held_reads_as_unknown() {
        // Two packed blocks a group.
        let mut table = SlotTable::new(64 * 2 * PACKED_BYTES);
        for n in 0..300u64 {
            table.set(key(2, n), 100 + n * 10);
        }
        assert_eq!(table.get(key(2, 127)), Some(100 + 1270));
        assert_eq!(
            table.get(key(2, 128)),
            None,
            "past the share: read from the file"
        );
        assert!(!table.has_room(2));
        table.set(key(2, 5), 1 << 50); // would go whole: no room, so not held
        assert_eq!(table.get(key(2, 5)), None);
        assert_eq!(table.get(key(2, 70)), Some(100 + 700));
        // A slot far past the held blocks is left to the file, not paid for.
        let mut table = SlotTable::new(64 << 20);
        table.set(key(3, 64 * 1000), 77);
        assert_eq!(table.get(key(3, 64 * 1000)), None);
        assert_eq!(table.usage().0, 0);
        let mut table = SlotTable::new(0);
        table.set(key(3, 0), 77);
        assert_eq!(table.get(key(3, 0)), None, "a budget of 0 holds nothing");
    }

    #[test]
    fn loaded_slots_match_what_sets_would_hold() {
        let slots: Vec<u64> = (0..200u64)
            .map(|n| if n % 7 == 3 { 0 } else { 50 + n * 300 })
            .collect();
        let mut loaded = SlotTable::new(64 << 20);
        loaded.load(4, 0, &slots);
        for (n, &loc) in slots.iter().enumerate() {
            assert_eq!(loaded.get(key(4, n as u64)), Some(loc));
        }
        assert_eq!(
            loaded.get(key(4, 200)),
            Some(0),
            "the short last block is padded"
        );
        assert_eq!(loaded.get(key(4, 256)), None);
    }
}
