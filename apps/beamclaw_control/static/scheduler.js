// The scheduler page: the jobs of the principal's users (GET /v1/scheduler/jobs), each
// one's runs, and for an operator Pause, Resume and Cancel on each job and a form to add
// one. The page is only built for an operator: a viewer may not list jobs.

import { api, el, notice, pressing, when } from "./console.js";

const table = document.querySelector("#jobs tbody");
const empty = document.getElementById("jobs-empty");
const showAll = document.getElementById("jobs-all");
const runs = document.getElementById("runs");
const runsTable = document.querySelector("#runs-table tbody");
const runsEmpty = document.getElementById("runs-empty");
const runsTitle = document.getElementById("runs-title");
const form = document.getElementById("job-form");
const agents = document.getElementById("job-agent");
const kind = document.getElementById("job-kind");
const spec = document.getElementById("job-spec");

/** What each kind's "When" field looks like, as its placeholder. */
const EXAMPLES = { every: "30m", at: "2026-12-01T09:00", cron: "0 9 * * 1-5", random: "09:00-17:00" };
/** The actions each state offers (a done job offers none but its runs). */
const ACTIONS = { active: ["pause", "cancel"], paused: ["resume", "cancel"], done: [] };
const LABELS = { pause: "Pause", resume: "Resume", cancel: "Cancel" };
/** Where the keyboard goes once pause or resume is done: the button that undoes it. */
const FOCUS_AFTER = { pause: "resume", resume: "pause" };

function short(id) {
  return String(id).slice(0, 8);
}

function actionButton(job, action) {
  const button = el("button", {
    type: "button",
    className: action === "cancel" ? "danger" : "",
    text: LABELS[action],
    "aria-label": `${LABELS[action]} job ${short(job.id)}`,
    data: { action, job: job.id },
  });
  button.addEventListener("click", () => {
    // Cancel cannot be undone: it asks once more on the same button (no blocking dialog).
    if (button.dataset.action === "cancel") {
      button.dataset.action = "confirm-cancel";
      button.textContent = "Really cancel?";
      return;
    }
    pressing(button, async () => {
      const answer = await api("POST", `/v1/scheduler/jobs/${encodeURIComponent(job.id)}/${action}`);
      if (action === "cancel") {
        notice(`cancelled job ${short(job.id)}`, "info");
        removeRow(job.id);
      } else {
        notice(`job ${short(job.id)} is ${answer.job.state}`, "info");
        replaceRow(answer.job, FOCUS_AFTER[action]);
      }
    });
  });
  return button;
}

function runsButton(job) {
  const button = el("button", {
    type: "button",
    className: "quiet",
    text: "Runs",
    "aria-label": `Runs of job ${short(job.id)}`,
    data: { action: "runs", job: job.id },
  });
  button.addEventListener("click", () => pressing(button, () => openRuns(job.id)));
  return button;
}

function stateCell(job) {
  return el(
    "td",
    { className: `job-state state-${job.state}` },
    el("span", { data: { field: "state" }, text: job.state }),
    job.paused_reason ? el("span", { className: "meta", text: ` ${job.paused_reason}` }) : null,
  );
}

function row(job) {
  return el(
    "tr",
    { data: { job: job.id, state: job.state } },
    el("td", { className: "mono", title: job.id, text: short(job.id) }),
    el("td", { text: job.agent }),
    el("td", { text: job.user }),
    el("td", { text: job.schedule }),
    el("td", { className: "message-text", text: job.message }),
    stateCell(job),
    el("td", { text: when(job.next_due) }),
    el("td", { text: String(job.errors ?? 0) }),
    el("td", { className: "actions" }, runsButton(job), ...(ACTIONS[job.state] || []).map((a) => actionButton(job, a))),
  );
}

/** Take a cancelled job's row away (the scheduler forgets the job), the keyboard's focus to the next row's first button. */
function removeRow(id) {
  const old = table.querySelector(`tr[data-job="${CSS.escape(id)}"]`);
  const next = old && (old.nextElementSibling || old.previousElementSibling);
  old?.remove();
  empty.hidden = table.rows.length > 0;
  (next?.querySelector("button") || document.getElementById("refresh")).focus();
}

/** Draw *job* again in its row, the keyboard's focus on its button for *action* (else its first). */
function replaceRow(job, action) {
  const old = table.querySelector(`tr[data-job="${CSS.escape(job.id)}"]`);
  const fresh = row(job);
  if (old) old.replaceWith(fresh);
  else table.prepend(fresh);
  (fresh.querySelector(`button[data-action="${action}"]`) || fresh.querySelector("button")).focus();
}

async function load() {
  const answer = await api("GET", `/v1/scheduler/jobs${showAll.checked ? "?all=1" : ""}`);
  table.replaceChildren(...answer.jobs.map(row));
  empty.hidden = answer.jobs.length > 0;
}

async function openRuns(id) {
  const answer = await api("GET", `/v1/scheduler/jobs/${encodeURIComponent(id)}/runs`);
  runsTitle.textContent = `Runs of job ${short(id)}`;
  const newest = answer.runs; // the scheduler answers newest first
  runsTable.replaceChildren(
    ...newest.map((run) =>
      el(
        "tr",
        { data: { run: String(run.run_id) } },
        el("td", { text: String(run.run_id) }),
        el("td", { text: when(run.due) }),
        el("td", { text: String(run.attempt) }),
        el("td", { text: run.state }),
        el("td", { text: when(run.started_at) }),
        el("td", { text: when(run.finished_at) }),
        el("td", { className: "message-text", text: run.detail || "" }),
      ),
    ),
  );
  runsEmpty.hidden = newest.length > 0;
  runs.hidden = false;
  document.getElementById("close-runs").focus();
}

async function loadAgents() {
  const answer = await api("GET", "/v1/agents");
  agents.replaceChildren(
    ...answer.agents.map((agent) => el("option", { value: agent.name, text: agent.name, selected: agent.default ? "" : null })),
  );
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const fields = Object.fromEntries(new FormData(form));
  const body = { agent: fields.agent, kind: fields.kind, spec: fields.spec, message: fields.message };
  if (fields.user) body.user = fields.user;
  if (fields.timezone) body.timezone = fields.timezone;
  pressing(document.getElementById("job-add"), async () => {
    const answer = await api("POST", "/v1/scheduler/jobs", body);
    notice(`added job ${short(answer.job.id)}: ${answer.job.schedule}`, "info");
    form.elements.message.value = "";
    await load();
  });
});

kind.addEventListener("change", () => {
  spec.placeholder = EXAMPLES[kind.value] || "";
});
document.getElementById("refresh").addEventListener("click", (event) => pressing(event.currentTarget, load));
showAll.addEventListener("change", () => load().catch((error) => notice(error.message)));
document.getElementById("close-runs").addEventListener("click", () => {
  runs.hidden = true;
});

Promise.all([load(), loadAgents()]).catch((error) => notice(error.message));
