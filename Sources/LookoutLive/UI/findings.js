// The Findings view: the audit's findings (`audit.enabled`) of the exchanges in the table, grouped
// by id — most frequent first — with the exchanges behind each; one opens its detail.
"use strict";

function findingGroups() {
  const groups = new Map();
  for (const record of state.rows) {
    for (const finding of record.findings || []) {
      const group = groups.get(finding.id) || { finding, records: [] };
      if (!group.records.includes(record)) group.records.push(record);
      groups.set(finding.id, group);
    }
  }
  return [...groups.values()].sort((a, b) => b.records.length - a.records.length || a.finding.id.localeCompare(b.finding.id));
}

function openFindings() {
  state.detailId = null;
  stopMessages();
  $("detail").hidden = false;
  $("detail-title").textContent = "Findings";
  const body = $("detail-body");
  body.replaceChildren();
  body.dataset.id = "findings";
  const groups = findingGroups();
  if (!groups.length) {
    const none = document.createElement("p");
    none.id = "findings-none";
    none.textContent = "No findings among the exchanges in the table (audit.enabled turns the checks on).";
    body.appendChild(none);
    return;
  }
  const list = document.createElement("div");
  list.id = "findings-view";
  for (const group of groups) {
    const box = document.createElement("section");
    box.className = "finding-group " + group.finding.severity;
    box.dataset.finding = group.finding.id;
    const heading = document.createElement("h3");
    heading.textContent = `${group.finding.id} · ${group.finding.severity} · CWE-${group.finding.cwe} · ${group.records.length} exchange${group.records.length === 1 ? "" : "s"}`;
    box.appendChild(heading);
    const items = document.createElement("ol");
    items.className = "attempts";
    for (const record of group.records) {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = "#";
      link.className = "finding-exchange";
      link.dataset.id = record.id;
      link.textContent = `#${record.id} ${record.method} ${record.url}`;
      link.addEventListener("click", (event) => { event.preventDefault(); select(record.id); openDetail(record.id); });
      item.appendChild(link);
      items.appendChild(item);
    }
    box.appendChild(items);
    list.appendChild(box);
  }
  body.appendChild(list);
}

$("findings").addEventListener("click", openFindings);
