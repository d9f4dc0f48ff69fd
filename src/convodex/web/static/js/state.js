// What the page remembers between requests: one object, shared by the modules.
export const state = {
  seq: 0, // the latest search request; older answers are dropped
  query: "", // the query of the hits shown (the session view marks where it matches)
  cursor: null,
  cursorUsed: false,
  hits: [],
  subagentHits: false,
  error: null,
  facets: { agents: "", projects: "" }, // what the filter controls were last built from
  progress: null, // the server's last progress: {state, counts, sentence}
  revision: null,
  open: null, // {sessionId, sessionPath, messageIndex}
  redact: false, // the export menus' "redact secrets" choice, shared by all of them
  lastRefresh: 0,
};
