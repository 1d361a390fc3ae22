/* The package page: sends the chosen zip to POST /v1/skill-packages, then shows the install as
   the service recorded it (GET /v1/skill-packages/{install_id}), with every reason when refused. */
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const FIELDS = [["install_id", "Install id"], ["skill_id", "Skill"], ["version", "Version"],
    ["previous_version", "Previous version"], ["action", "Action"], ["package_size", "Size (bytes)"],
    ["package_sha256", "sha256"], ["created_at", "Started"], ["finished_at", "Finished"]];

  function item(tag, text) { const n = document.createElement(tag); n.textContent = text; return n; }

  function reasonText(e) {
    if (typeof e === "string") return e;
    return [e.path, e.message || JSON.stringify(e)].filter(Boolean).join(": ");
  }

  function show(status, record, error) {
    $("install-result").hidden = false;
    $("install-status").textContent = status;
    $("install-status").className = `badge st-${status}`;
    $("install-error").hidden = !error;
    $("install-error").textContent = error ? `${error.code}: ${error.message}` : "";
    const reasons = error ? (error.details || {}).errors || [] : [];
    $("install-reasons").replaceChildren(...reasons.map((e) => item("li", reasonText(e))));
    for (const w of (record && record.warnings) || []) $("install-reasons").append(item("li", `warning: ${w}`));
    const rows = [];
    for (const [key, label] of FIELDS) {
      if (!record || record[key] === null || record[key] === undefined) continue;
      const when = key.endsWith("_at");  /* in the reader's time zone, as every page's times */
      let value = item("dd", when ? window.localTime(record[key]) : String(record[key]));
      if (when) value.title = record[key];
      if (key === "skill_id" && status === "succeeded") {
        value = document.createElement("dd");
        const link = item("a", record.skill_id); link.href = `/ui/skills/${encodeURIComponent(record.skill_id)}`;
        value.append(link);
      }
      rows.push(item("dt", label), value);
    }
    $("install-record").replaceChildren(...rows);
  }

  $("package-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = $("package").files[0];
    if (!file) return;
    $("install").disabled = true;
    show("installing", null, null);
    try {
      const body = new FormData();
      body.append("package", file, file.name);
      const answer = await fetch("/v1/skill-packages", { method: "POST", body });
      const sent = await answer.json().catch(() => ({}));
      const error = answer.ok ? null : sent.error || { code: String(answer.status), message: answer.statusText };
      const installId = answer.ok ? sent.install_id : ((error.details || {}).install_id);
      let record = answer.ok ? sent : null;
      if (installId) {  /* the install as recorded (and readable later by its id) */
        const read = await fetch(`/v1/skill-packages/${encodeURIComponent(installId)}`);
        if (read.ok) record = await read.json();
      }
      show(record ? record.status : "failed", record, error);
    } catch (err) {
      show("failed", null, { code: "CONNECTION_FAILED", message: String(err) });
    } finally {
      $("install").disabled = false;
    }
  });
})();
