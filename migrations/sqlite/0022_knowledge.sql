-- The knowledge graph (spec §12): each agent's private entities and the directed, typed
-- relations between them. An entity is its agent's by name (byte-exact); a relation is one
-- per (from, to, type), adding it again changes its weight.
CREATE TABLE knowledge_entities (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    attributes  TEXT NOT NULL,   -- a JSON object
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (agent_id, name)
);
CREATE INDEX knowledge_entities_by_agent ON knowledge_entities(agent_id, id);

CREATE TABLE knowledge_relations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id      TEXT NOT NULL,
    from_id       INTEGER NOT NULL REFERENCES knowledge_entities(id),
    to_id         INTEGER NOT NULL REFERENCES knowledge_entities(id),
    relation_type TEXT NOT NULL,
    weight        REAL NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (from_id, to_id, relation_type)
);
-- The walk follows relations out of an entity (the unique index) and into it (this one).
CREATE INDEX knowledge_relations_to ON knowledge_relations(to_id);
CREATE INDEX knowledge_relations_by_agent ON knowledge_relations(agent_id, id);
