// The memory page: for an operator, a search of an agent's long-term memory (GET
// /v1/memory/search) showing each line range found (its file, its lines, its text); for
// everyone, each agent's index status (GET /v1/memory/status); for an admin, Reindex.

import { api, el, notice, pressing } from "./console.js";

const form = document.getElementById("memory-form");
const agents = document.getElementById("memory-agent");
const summary = document.getElementById("memory-summary");
const hits = document.getElementById("memory-hits");
const statusTable = document.getElementById("memory-status");
const reindex = document.getElementById("memory-reindex");

function hit(item, index) {
  const lines = item.start_line === item.end_line ? `line ${item.start_line}` : `lines ${item.start_line}–${item.end_line}`;
  return el(
    "li",
    { className: "hit card", data: { path: item.path, start: String(item.start_line), end: String(item.end_line) } },
    el(
      "div",
      { className: "hit-where" },
      el("span", { className: "mono hit-path", text: item.path }),
      el("span", { className: "hit-lines", text: lines }),
      el("span", { className: "meta", text: `${item.kind} · score ${Number(item.score).toFixed(3)}` }),
    ),
    el("pre", { className: "hit-text", "aria-label": `Result ${index + 1}, ${item.path} ${lines}`, text: item.text }),
  );
}

async function search() {
  const fields = Object.fromEntries(new FormData(form));
  const query = new URLSearchParams({ q: fields.q });
  for (const key of ["agent", "user", "limit"]) {
    if (fields[key]) query.set(key, fields[key]);
  }
  const answer = await api("GET", `/v1/memory/search?${query}`);
  hits.replaceChildren(...answer.hits.map(hit));
  const whose = answer.user ? `${answer.agent}'s files and ${answer.user}'s conversations` : `${answer.agent}'s files`;
  const found = answer.hits.length === 1 ? "1 passage" : `${answer.hits.length} passages`;
  summary.textContent = `${found} found in ${whose}${answer.note ? ` (${answer.note})` : ""}`;
}

/** The status table: one row per agent, a column per figure the index reports. */
async function loadStatus() {
  const answer = await api("GET", "/v1/memory/status");
  const rows = answer.agents;
  const keys = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  keys.sort((a, b) => (a === "agent" ? -1 : b === "agent" ? 1 : 0));
  statusTable.tHead.rows[0].replaceChildren(...keys.map((key) => el("th", { scope: "col", text: key.replaceAll("_", " ") })));
  const cell = (value) => el("td", { text: value === null || value === undefined ? "" : String(value) });
  statusTable.tBodies[0].replaceChildren(...rows.map((row) => el("tr", { data: { agent: String(row.agent ?? "") } }, ...keys.map((key) => cell(row[key])))));
}

async function loadAgents() {
  const answer = await api("GET", "/v1/agents");
  agents.replaceChildren(
    ...answer.agents.map((agent) => el("option", { value: agent.name, text: agent.name, selected: agent.default ? "" : null })),
  );
}

if (form) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    pressing(document.getElementById("memory-search"), search);
  });
  loadAgents().catch((error) => notice(error.message));
}
if (reindex) {
  // An admin's (the template has the button for admins only): the agent chosen for the search.
  reindex.addEventListener("click", () =>
    pressing(reindex, async () => {
      const agent = agents.value;
      await api("POST", "/v1/memory/reindex", agent ? { agent } : {});
      notice(`indexed ${agent || "the default agent"}'s memory again`, "info");
      await loadStatus();
    }),
  );
}
document.getElementById("refresh-status").addEventListener("click", (event) => pressing(event.currentTarget, loadStatus));
loadStatus().catch((error) => notice(`the memory status could not be read: ${error.message}`));
