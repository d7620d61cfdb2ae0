// The usage page: the model's tokens per agent and day (GET /v1/usage?days=N), and each
// agent's tokens today against its daily budget.

import { api, el, notice, pressing } from "./console.js";

const days = document.getElementById("usage-days");
const table = document.querySelector("#usage-table tbody");
const budgets = document.querySelector("#usage-budgets tbody");
const empty = document.getElementById("usage-empty");

function number(value) {
  return Number(value || 0).toLocaleString();
}

function budgetRow(budget) {
  const limit = budget.daily_tokens;
  const used = budget.used_today || 0;
  let share = el("td", { className: "note", text: "no budget" });
  if (limit) {
    const percent = (100 * used) / limit;
    share = el(
      "td",
      { className: used >= limit ? "over" : "" },
      el("meter", { min: "0", max: String(limit), low: String(limit * 0.5), high: String(limit * 0.8), optimum: "0",
                    value: String(Math.min(used, limit)), title: `${used} of ${limit} tokens` }),
      ` ${percent < 10 ? percent.toFixed(1) : Math.round(percent)}%`,
    );
  }
  return el(
    "tr",
    { data: { agent: budget.agent } },
    el("td", { text: budget.agent }),
    el("td", { text: number(used) }),
    el("td", { text: limit ? number(limit) : "none" }),
    share,
  );
}

function dayRow(day) {
  return el(
    "tr",
    { data: { day: day.day, agent: day.agent } },
    el("td", { text: day.day }),
    el("td", { text: day.agent }),
    el("td", { text: number(day.prompt_tokens) }),
    el("td", { text: number(day.completion_tokens) }),
    el("td", { text: number(day.total_tokens) }),
  );
}

async function load() {
  const answer = await api("GET", `/v1/usage?days=${encodeURIComponent(days.value)}`);
  budgets.replaceChildren(...answer.budgets.map(budgetRow));
  table.replaceChildren(...answer.days.map(dayRow));
  empty.hidden = answer.days.length > 0;
  for (const key of ["prompt", "completion", "total"]) {
    const sum = answer.days.reduce((all, day) => all + (day[`${key}_tokens`] || 0), 0);
    document.getElementById(`usage-${key}`).textContent = number(sum);
  }
}

days.addEventListener("change", () => load().catch((error) => notice(error.message)));
document.getElementById("refresh").addEventListener("click", (event) => pressing(event.currentTarget, load));
load().catch((error) => notice(error.message));
