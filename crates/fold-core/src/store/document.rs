//! The store's document: the marks and whatever else the file holds, parsed from and serialized
//! to DSH's storage-json layout, plus the per-session index and pruning.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Limits, MAX_MARK_ID, UNIT_NAME, UNIT_VERSION};
use crate::error::{FoldError, Result};

/// One checkpoint mark as stored and as returned to callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// The whole file, parsed. Unknown `global` keys and other tables are carried through untouched.
#[derive(Debug, Clone, Default)]
pub(super) struct Document {
    pub(super) next_id: u64,
    pub(super) marks: BTreeMap<u64, MarkRecord>,
    /// Newest mark id of each session (the one `latest` answers with).
    pub(super) latest: HashMap<String, u64>,
    pub(super) other_global: Map<String, Value>,
    pub(super) other_tables: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Unit {
    pub(super) name: String,
    pub(super) version: u64,
}

impl Document {
    pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<Self> {
        let root: Value =
            serde_json::from_slice(bytes).map_err(|e| FoldError::corrupt(path, format!("invalid JSON: {e}")))?;
        let Value::Object(mut root) = root else {
            return Err(FoldError::corrupt(path, "top level is not an object"));
        };
        let unit: Unit = root
            .remove("unit")
            .ok_or_else(|| FoldError::corrupt(path, "no `unit`"))
            .and_then(|u| {
                serde_json::from_value(u).map_err(|e| FoldError::corrupt(path, format!("bad `unit`: {e}")))
            })?;
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
        let mut other_global = match root.remove("global") {
            Some(Value::Object(g)) => g,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`global` is not an object")),
        };
        let mut other_tables = match root.remove("tables") {
            Some(Value::Object(t)) => t,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`tables` is not an object")),
        };
        if let Some(key) = root.keys().next() {
            return Err(FoldError::corrupt(path, format!("unexpected top-level key `{key}`")));
        }
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
        let rows = match other_tables.remove("marks") {
            Some(Value::Object(rows)) => rows,
            None => Map::new(),
            Some(_) => return Err(FoldError::corrupt(path, "`tables.marks` is not an object")),
        };
        let mut doc = Document {
            other_global,
            other_tables,
            ..Default::default()
        };
        for (key, row) in rows {
            let mark: MarkRecord =
                serde_json::from_value(row).map_err(|e| FoldError::corrupt(path, format!("mark `{key}`: {e}")))?;
            if key != mark.id.to_string() || mark.id == 0 || mark.id > MAX_MARK_ID {
                return Err(FoldError::corrupt(path, format!("mark `{key}` has id {}", mark.id)));
            }
            next_id = next_id.max(mark.id + 1);
            doc.insert(mark);
        }
        doc.next_id = next_id;
        Ok(doc)
    }

    /// The file's bytes, serialized straight from the records. (Building a `serde_json::Value`
    /// per mark first, then the bytes, was ~70 % of a write's CPU with 10,000 marks stored;
    /// bench/mark.mjs.)
    pub(super) fn to_json(&self) -> Vec<u8> {
        use serde::ser::{SerializeMap, Serializer};

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
        /// The marks table: `{"<id>": mark}` (serde_json writes integer keys as strings).
        struct Marks<'a>(&'a BTreeMap<u64, MarkRecord>);
        impl Serialize for Marks<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_map(self.0)
            }
        }
        #[derive(Serialize)]
        struct UnitOut {
            name: &'static str,
            version: u64,
        }
        #[derive(Serialize)]
        struct Root<'a> {
            unit: UnitOut,
            global: With<'a, u64>,
            tables: With<'a, Marks<'a>>,
        }
        serde_json::to_vec(&Root {
            unit: UnitOut {
                name: UNIT_NAME,
                version: UNIT_VERSION,
            },
            global: With {
                other: &self.other_global,
                key: "nextId",
                value: self.next_id,
            },
            tables: With {
                other: &self.other_tables,
                key: "marks",
                value: Marks(&self.marks),
            },
        })
        .expect("document serializes")
    }

    pub(super) fn insert(&mut self, mark: MarkRecord) {
        let latest = self.latest.entry(mark.session_id.clone()).or_insert(mark.id);
        *latest = (*latest).max(mark.id);
        self.marks.insert(mark.id, mark);
    }

    pub(super) fn latest(&self, session_id: &str) -> Option<&MarkRecord> {
        self.latest.get(session_id).and_then(|id| self.marks.get(id))
    }

    /// Drops marks past the age limit and all but the newest `max_marks_per_session` per session.
    /// Returns whether anything was removed.
    pub(super) fn prune(&mut self, limits: Limits, now: u64) -> bool {
        let before = self.marks.len();
        let cutoff = now.saturating_sub(limits.max_age_ms);
        let mut kept_per_session: HashMap<&str, u32> = HashMap::new();
        let mut doomed = Vec::new();
        for (id, mark) in self.marks.iter().rev() {
            let kept = kept_per_session.entry(mark.session_id.as_str()).or_default();
            if mark.created_at < cutoff || *kept >= limits.max_marks_per_session {
                doomed.push(*id);
            } else {
                *kept += 1;
            }
        }
        for id in doomed {
            self.marks.remove(&id);
        }
        if self.marks.len() != before {
            self.latest.clear();
            for mark in self.marks.values() {
                self.latest.insert(mark.session_id.clone(), mark.id);
            }
        }
        self.marks.len() != before
    }
}
