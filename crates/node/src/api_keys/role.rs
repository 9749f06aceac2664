//! The roles a named API key can hold, and what each lets a caller do.
//!
//! Exists so that an operator can hand a script or a colleague less than everything
//! (Shlink's API-key roles): one shared key was all-or-nothing.

use std::fmt;
use std::str::FromStr;

/// One role of a named key. A key holds one or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Everything, as the old single `SHARDKIT_API_KEY`.
    Admin,
    /// Create links (`POST /api/links`, bulk) and read a link by its code.
    LinksCreate,
    /// Read every link: list, export, one link with its clicks.
    LinksRead,
    /// Read counters.
    CountersRead,
    /// Increment and set counters.
    CountersWrite,
    /// Ids and tickets.
    Ids,
}

/// Every role, in the order `keys list` prints them.
pub const ALL_ROLES: [Role; 6] = [
    Role::Admin,
    Role::LinksCreate,
    Role::LinksRead,
    Role::CountersRead,
    Role::CountersWrite,
    Role::Ids,
];

impl Role {
    /// The role's name as written in `--role` and in `keys.json`.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::LinksCreate => "links:create",
            Role::LinksRead => "links:read",
            Role::CountersRead => "counters:read",
            Role::CountersWrite => "counters:write",
            Role::Ids => "ids",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ALL_ROLES
            .into_iter()
            .find(|r| r.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL_ROLES.iter().map(|r| r.name()).collect();
                format!("unknown role {text:?}: use one of {}", names.join(", "))
            })
    }
}

/// What a request or command needs; [`Grant::allows`] decides with the caller's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Open to anyone (no key needed).
    Nothing,
    /// Creating links.
    LinksCreate,
    /// Reading one link by its code (a creator may read what it created).
    LinkByCode,
    /// Reading all links (list, export).
    LinksRead,
    /// Reading counters.
    CountersRead,
    /// Writing counters.
    CountersWrite,
    /// Ids and tickets.
    Ids,
    /// Only an admin key (edits of links, metrics, the API document).
    Admin,
}

impl Need {
    /// What a caller needs, in words, for error messages.
    pub const fn describe(self) -> &'static str {
        match self {
            Need::Nothing => "nothing",
            Need::LinksCreate => "the role links:create",
            Need::LinkByCode => "the role links:read or links:create",
            Need::LinksRead => "the role links:read",
            Need::CountersRead => "the role counters:read or counters:write",
            Need::CountersWrite => "the role counters:write",
            Need::Ids => "the role ids",
            Need::Admin => "the role admin",
        }
    }
}

/// The roles a caller proved with its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The key's name (`admin` for the configured `SHARDKIT_API_KEY`).
    pub name: String,
    /// Its roles.
    pub roles: Vec<Role>,
    /// Sees only the links it created (lists, export, reads by code).
    pub author_only: bool,
}

impl Grant {
    /// Whether this caller may see `link`: any link, or for an author-only key the
    /// links it created.
    pub fn may_see(&self, link: &shardkit_links::Link) -> bool {
        !self.author_only || link.author.as_deref() == Some(self.name.as_str())
    }

    /// The grant of the single configured key: everything.
    pub fn admin(name: &str) -> Self {
        Self {
            name: name.to_string(),
            roles: vec![Role::Admin],
            author_only: false,
        }
    }

    /// Whether these roles cover `need`.
    pub fn allows(&self, need: Need) -> bool {
        let has = |r: Role| self.roles.contains(&Role::Admin) || self.roles.contains(&r);
        match need {
            Need::Nothing => true,
            Need::LinksCreate => has(Role::LinksCreate),
            Need::LinkByCode => has(Role::LinksRead) || has(Role::LinksCreate),
            Need::LinksRead => has(Role::LinksRead),
            Need::CountersRead => has(Role::CountersRead) || has(Role::CountersWrite),
            Need::CountersWrite => has(Role::CountersWrite),
            Need::Ids => has(Role::Ids),
            Need::Admin => has(Role::Admin),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_round_trip_and_unknown_ones_are_named() {
        for role in ALL_ROLES {
            assert_eq!(role.name().parse::<Role>(), Ok(role));
        }
        let err = "links:write".parse::<Role>().unwrap_err();
        assert!(
            err.contains("links:write") && err.contains("links:create"),
            "{err}"
        );
    }

    #[test]
    fn admin_allows_everything_and_other_roles_only_their_part() {
        let admin = Grant::admin("admin");
        let reader = Grant {
            name: "r".into(),
            roles: vec![Role::CountersRead],
            author_only: false,
        };
        let creator = Grant {
            name: "c".into(),
            roles: vec![Role::LinksCreate],
            author_only: false,
        };
        for need in [Need::LinksRead, Need::CountersWrite, Need::Ids, Need::Admin] {
            assert!(admin.allows(need));
        }
        assert!(reader.allows(Need::CountersRead));
        assert!(!reader.allows(Need::CountersWrite));
        assert!(!reader.allows(Need::LinksRead));
        assert!(creator.allows(Need::LinksCreate));
        assert!(creator.allows(Need::LinkByCode));
        assert!(!creator.allows(Need::LinksRead));
        assert!(!creator.allows(Need::Admin));
    }
}
