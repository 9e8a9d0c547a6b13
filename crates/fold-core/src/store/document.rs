//! The store's document: the marks and whatever else the file holds, parsed from and serialized
//! to DSH's storage-json layout, plus the per-session index and pruning.
//!
//! Unknown data is kept, never dropped: extra fields of a mark (a newer minor version may add
//! some), extra keys of `global`, other tables and extra top-level keys are read, carried in
//! memory and written back unchanged. What a mark must have (`id`, `sessionId`, `logLength`,
//! `createdAt`, and `foldedAt` when present) is checked strictly.
//!
//! The file is parsed in one pass straight into records (no `serde_json::Value` per mark: that
//! was half a second at 100,000 marks, bench/has-active.mjs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::journal::Change;
use super::{Limits, MAX_MARK_ID, UNIT_NAME, UNIT_VERSION};
use crate::error::{FoldError, Result};

/// One checkpoint mark as stored and as returned to callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarkRecord {
    pub id: u64,
    pub session_id: String,
    /// The session's event count when the mark was taken: the fold anchor.
    pub log_length: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch; `None` while the mark is active.
    pub folded_at: Option<u64>,
}

/// The names of a mark's own fields; any other field is an extra, kept as it is.
const MARK_FIELDS: [&str; 6] = ["id", "sessionId", "logLength", "objective", "createdAt", "foldedAt"];

/// A mark with the fields this version does not know.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StoredMark {
    pub(super) mark: MarkRecord,
    pub(super) extras: Option<Map<String, Value>>,
}

/// The whole store, parsed.
#[derive(Debug, Clone, Default)]
pub(super) struct Document {
    /// The layout version of the file it was read from (0: no file).
    pub(super) version: u64,
    pub(super) next_id: u64,
    pub(super) marks: BTreeMap<u64, MarkRecord>,
    /// Each session's mark ids; the last is the one `latest` answers with.
    pub(super) sessions: HashMap<String, BTreeSet<u64>>,
    /// Unknown fields of the marks that have some.
    pub(super) extras: HashMap<u64, Map<String, Value>>,
    pub(super) other_global: Map<String, Value>,
    pub(super) other_tables: Map<String, Value>,
    pub(super) other_top: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unit {
    name: String,
    version: u64,
}

impl Document {
    /// A store with no file yet.
    pub(super) fn empty() -> Self {
        Self {
            next_id: 1,
            ..Self::default()
        }
    }

    pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let raw = RootSeed.deserialize(&mut de).and_then(|raw| de.end().map(|()| raw));
        let raw = raw.map_err(|e| match e.classify() {
            serde_json::error::Category::Data => FoldError::corrupt(path, e),
            _ => FoldError::corrupt(path, format!("invalid JSON: {e}")),
        })?;
        let unit = raw.unit.ok_or_else(|| FoldError::corrupt(path, "no `unit`"))?;
        if unit.name != UNIT_NAME {
            return Err(FoldError::corrupt(
                path,
                format!("unit is `{}`, expected `{UNIT_NAME}`", unit.name),
            ));
        }
        if unit.version > UNIT_VERSION {
            return Err(FoldError::StoreVersion(format!(
                "checkpoint store {} has layout version {}, newer than the {UNIT_VERSION} this dsh-fold reads; \
                 upgrade dsh-fold (the file was left unchanged)",
                path.display(),
                unit.version
            )));
        }
        if unit.version < 1 {
            return Err(FoldError::corrupt(
                path,
                format!("unknown layout version {}", unit.version),
            ));
        }
        let mut other_global = raw.global;
        let mut next_id = match other_global.remove("nextId") {
            None => 1,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_MARK_ID + 1).contains(n))
                .ok_or_else(|| {
                    FoldError::corrupt(
                        path,
                        format!("`global.nextId` is not an integer from 1 to {}", MAX_MARK_ID + 1),
                    )
                })?,
        };
        let mut doc = Document {
            version: unit.version,
            other_global,
            other_tables: raw.tables.other,
            other_top: raw.other,
            ..Default::default()
        };
        for (key, stored) in raw.tables.marks {
            let id = stored.mark.id;
            if !names(&key, id) || id == 0 || id > MAX_MARK_ID {
                return Err(FoldError::corrupt(path, format!("mark `{key}` has id {id}")));
            }
            next_id = next_id.max(id + 1);
            doc.insert(stored);
        }
        doc.next_id = next_id;
        Ok(doc)
    }

    /// The file's bytes, serialized straight from the records. (Building a `serde_json::Value`
    /// per mark first, then the bytes, was ~70 % of a write's CPU with 10,000 marks stored;
    /// bench/mark.mjs.)
    pub(super) fn to_json(&self) -> Vec<u8> {
        /// The entries of `other` plus `key: value` (replacing an entry of that key).
        struct With<'a, V> {
            other: &'a Map<String, Value>,
            key: &'static str,
            value: V,
        }
        impl<V: Serialize> Serialize for With<'_, V> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(None)?;
                for (k, v) in self.other.iter().filter(|(k, _)| k.as_str() != self.key) {
                    map.serialize_entry(k, v)?;
                }
                map.serialize_entry(self.key, &self.value)?;
                map.end()
            }
        }
        /// The marks table: `{"<id>": mark}`, each mark with its extras.
        struct Marks<'a>(&'a Document);
        impl Serialize for Marks<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let doc = self.0;
                let mut map = s.serialize_map(Some(doc.marks.len()))?;
                for (id, mark) in &doc.marks {
                    map.serialize_entry(id, &MarkOut(mark, doc.extras.get(id)))?;
                }
                map.end()
            }
        }
        #[derive(Serialize)]
        struct UnitOut {
            name: &'static str,
            version: u64,
        }
        struct Root<'a>(&'a Document);
        impl Serialize for Root<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let doc = self.0;
                let mut map = s.serialize_map(None)?;
                map.serialize_entry(
                    "unit",
                    &UnitOut {
                        name: UNIT_NAME,
                        version: UNIT_VERSION,
                    },
                )?;
                map.serialize_entry(
                    "global",
                    &With {
                        other: &doc.other_global,
                        key: "nextId",
                        value: doc.next_id,
                    },
                )?;
                map.serialize_entry(
                    "tables",
                    &With {
                        other: &doc.other_tables,
                        key: "marks",
                        value: Marks(doc),
                    },
                )?;
                for (k, v) in &doc.other_top {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
        serde_json::to_vec(&Root(self)).expect("document serializes")
    }

    /// Adds a mark (replacing one of the same id) and indexes it.
    pub(super) fn insert(&mut self, stored: StoredMark) {
        let StoredMark { mark, extras } = stored;
        let id = mark.id;
        if let Some(old) = self.marks.get(&id) {
            if old.session_id != mark.session_id {
                let old_session = old.session_id.clone();
                self.unindex(&old_session, id);
            }
        }
        // The session's id is copied once per session, not once per mark.
        match self.sessions.get_mut(&mark.session_id) {
            Some(ids) => {
                ids.insert(id);
            }
            None => {
                self.sessions.insert(mark.session_id.clone(), BTreeSet::from([id]));
            }
        }
        self.marks.insert(id, mark);
        match extras {
            Some(extras) if !extras.is_empty() => {
                self.extras.insert(id, extras);
            }
            _ => {
                self.extras.remove(&id);
            }
        }
    }

    fn unindex(&mut self, session_id: &str, id: u64) {
        if let Some(ids) = self.sessions.get_mut(session_id) {
            ids.remove(&id);
            if ids.is_empty() {
                self.sessions.remove(session_id);
            }
        }
    }

    fn remove(&mut self, id: u64) {
        if let Some(mark) = self.marks.remove(&id) {
            self.unindex(&mark.session_id, id);
            self.extras.remove(&id);
        }
    }

    /// The id of the session's newest mark.
    pub(super) fn latest_id(&self, session_id: &str) -> Option<u64> {
        self.sessions.get(session_id).and_then(|ids| ids.last().copied())
    }

    pub(super) fn latest(&self, session_id: &str) -> Option<&MarkRecord> {
        self.latest_id(session_id).and_then(|id| self.marks.get(&id))
    }

    /// Checks that `changes` can be replayed here: a journaled mark whose id this document gives
    /// to a different mark means the journal does not belong to this store file.
    pub(super) fn check(&self, path: &Path, changes: &[Change]) -> Result<()> {
        for change in changes {
            if let Change::Mark(stored) = change {
                let new = &stored.mark;
                if let Some(old) = self.marks.get(&new.id) {
                    if (&old.session_id, old.log_length, old.created_at)
                        != (&new.session_id, new.log_length, new.created_at)
                    {
                        return Err(FoldError::corrupt(
                            path,
                            format!(
                                "its journal has a mark {} (session {}) that the store file has for session {}",
                                new.id, new.session_id, old.session_id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Replays journaled changes ([`Document::check`] them first). Idempotent: a mark already
    /// here is kept as it is (it may be folded since), a fold of a folded or unknown mark does
    /// nothing. Returns the sessions whose marks changed.
    pub(super) fn apply(&mut self, changes: Vec<Change>) -> Vec<String> {
        let mut touched = Vec::new();
        for change in changes {
            match change {
                Change::Mark(stored) => {
                    let id = stored.mark.id;
                    self.next_id = self.next_id.max(id + 1);
                    if !self.marks.contains_key(&id) {
                        touched.push(stored.mark.session_id.clone());
                        self.insert(stored);
                    }
                }
                Change::Fold { id, folded_at } => {
                    if let Some(mark) = self.marks.get_mut(&id) {
                        if mark.folded_at.is_none() {
                            mark.folded_at = Some(folded_at);
                        }
                    }
                }
            }
        }
        touched
    }

    /// The pruning of one write, without a pass over every mark: the sessions that got marks
    /// are cut to the cap, and marks past the age limit are dropped from the oldest id on until
    /// the first one within it (ids grow with time; [`Document::prune`] at every rewrite of
    /// the file catches what that misses).
    pub(super) fn prune_after(&mut self, limits: Limits, now: u64, sessions: &[String]) {
        let cap = limits.max_marks_per_session as usize;
        let mut doomed = Vec::new();
        for session in sessions {
            if let Some(ids) = self.sessions.get(session) {
                if ids.len() > cap {
                    doomed.extend(ids.iter().take(ids.len() - cap));
                }
            }
        }
        let cutoff = now.saturating_sub(limits.max_age_ms);
        doomed.extend(self.marks.values().take_while(|m| m.created_at < cutoff).map(|m| m.id));
        for id in doomed {
            self.remove(id);
        }
    }

    /// Drops marks past the age limit and all but the newest `max_marks_per_session` per session.
    /// Returns whether anything was removed.
    pub(super) fn prune(&mut self, limits: Limits, now: u64) -> bool {
        let cutoff = now.saturating_sub(limits.max_age_ms);
        let cap = limits.max_marks_per_session as usize;
        let mut doomed: Vec<u64> = self
            .marks
            .values()
            .filter(|m| m.created_at < cutoff)
            .map(|m| m.id)
            .collect();
        for ids in self.sessions.values() {
            if ids.len() > cap {
                doomed.extend(ids.iter().take(ids.len() - cap));
            }
        }
        for id in &doomed {
            self.remove(*id);
        }
        !doomed.is_empty()
    }
}

/// Whether a row's key is `id` written the one way the store writes it (decimal, no leading
/// zero), without formatting `id` (a string per mark at every load).
fn names(key: &str, id: u64) -> bool {
    let canonical = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) && (key == "0" || !key.starts_with('0'));
    canonical && key.parse::<u64>() == Ok(id)
}

/// A mark's JSON: its own fields, then its extras (never one shadowing an own field).
pub(super) struct MarkOut<'a>(pub(super) &'a MarkRecord, pub(super) Option<&'a Map<String, Value>>);

impl Serialize for MarkOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let MarkOut(mark, extras) = *self;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", &mark.id)?;
        map.serialize_entry("sessionId", &mark.session_id)?;
        map.serialize_entry("logLength", &mark.log_length)?;
        if let Some(objective) = &mark.objective {
            map.serialize_entry("objective", objective)?;
        }
        map.serialize_entry("createdAt", &mark.created_at)?;
        map.serialize_entry("foldedAt", &mark.folded_at)?;
        for (k, v) in extras.into_iter().flatten() {
            if !MARK_FIELDS.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StoredMark {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct MarkVisitor;
        impl<'de> Visitor<'de> for MarkVisitor {
            type Value = StoredMark;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mark object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<StoredMark, A::Error> {
                let (mut id, mut session_id, mut log_length, mut created_at) = (None, None, None, None);
                let (mut objective, mut folded_at) = (None, None);
                let mut extras = Map::new();
                // A repeated key: the last one wins, as in any JSON object read into a map.
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" => id = Some(map.next_value::<u64>()?),
                        "sessionId" => session_id = Some(map.next_value::<String>()?),
                        "logLength" => log_length = Some(map.next_value::<u64>()?),
                        "objective" => objective = map.next_value::<Option<String>>()?,
                        "createdAt" => created_at = Some(map.next_value::<u64>()?),
                        "foldedAt" => folded_at = map.next_value::<Option<u64>>()?,
                        _ => {
                            extras.insert(key, map.next_value::<Value>()?);
                        }
                    }
                }
                let missing = |name: &'static str| de::Error::missing_field(name);
                Ok(StoredMark {
                    mark: MarkRecord {
                        id: id.ok_or_else(|| missing("id"))?,
                        session_id: session_id.ok_or_else(|| missing("sessionId"))?,
                        log_length: log_length.ok_or_else(|| missing("logLength"))?,
                        objective,
                        created_at: created_at.ok_or_else(|| missing("createdAt"))?,
                        folded_at,
                    },
                    extras: (!extras.is_empty()).then_some(extras),
                })
            }
        }
        d.deserialize_map(MarkVisitor)
    }
}

/// The top level as read: the parts this version knows, and the rest.
struct RawRoot {
    unit: Option<Unit>,
    global: Map<String, Value>,
    tables: RawTables,
    other: Map<String, Value>,
}

#[derive(Default)]
struct RawTables {
    /// `(key, mark)` in file order; a repeated key appears twice and the later one wins.
    marks: Vec<(String, StoredMark)>,
    other: Map<String, Value>,
}

struct RootSeed;

impl<'de> DeserializeSeed<'de> for RootSeed {
    type Value = RawRoot;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<RawRoot, D::Error> {
        struct RootVisitor;
        impl<'de> Visitor<'de> for RootVisitor {
            type Value = RawRoot;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object at the top level")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<RawRoot, A::Error> {
                let mut root = RawRoot {
                    unit: None,
                    global: Map::new(),
                    tables: RawTables::default(),
                    other: Map::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "unit" => {
                            let unit = map
                                .next_value::<Unit>()
                                .map_err(|e| de::Error::custom(format!("bad `unit`: {e}")))?;
                            root.unit = Some(unit);
                        }
                        "global" => {
                            root.global = map
                                .next_value::<Map<String, Value>>()
                                .map_err(|e| de::Error::custom(format!("`global` is not an object: {e}")))?;
                        }
                        "tables" => root.tables = map.next_value::<RawTables>()?,
                        _ => {
                            root.other.insert(key, map.next_value::<Value>()?);
                        }
                    }
                }
                Ok(root)
            }
        }
        d.deserialize_map(RootVisitor)
    }
}

impl<'de> Deserialize<'de> for RawTables {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct TablesVisitor;
        impl<'de> Visitor<'de> for TablesVisitor {
            type Value = RawTables;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`tables` as an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<RawTables, A::Error> {
                let mut tables = RawTables::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "marks" {
                        tables.marks = map.next_value::<MarkRows>()?.0;
                    } else {
                        tables.other.insert(key, map.next_value::<Value>()?);
                    }
                }
                Ok(tables)
            }
        }
        d.deserialize_map(TablesVisitor)
            .map_err(|e| de::Error::custom(format!("`tables`: {e}")))
    }
}

/// The rows of `tables.marks`, each error naming its row.
struct MarkRows(Vec<(String, StoredMark)>);

impl<'de> Deserialize<'de> for MarkRows {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct RowsVisitor;
        impl<'de> Visitor<'de> for RowsVisitor {
            type Value = MarkRows;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`tables.marks` as an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<MarkRows, A::Error> {
                let mut rows = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(key) = map.next_key::<String>()? {
                    let mark = map
                        .next_value::<StoredMark>()
                        .map_err(|e| de::Error::custom(format!("mark `{key}`: {e}")))?;
                    rows.push((key, mark));
                }
                Ok(MarkRows(rows))
            }
        }
        d.deserialize_map(RowsVisitor)
    }
}
