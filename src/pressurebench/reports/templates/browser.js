// Builds the transcript list from the embedded JSON. Every piece of data is
// inserted with textContent or as an option's text: never parsed as HTML.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("pb-data").textContent);
  const ROWS = DATA.rows;
  const PAGE = 50;
  const NONE = "\u2014";
  const VERDICT_LABEL = { pass: "pass", fail: "fail", error: "undetermined / error" };
  const STATUS_LABEL = { ok: "ok", error: "error", missing: "conversation missing" };
  const FIDELITY_LABEL = {
    out_of_character: "out of character",
    leak: "leak",
    role_swap: "role swap / echo",
    landmark_skipped: "landmark skipped",
    no_pressure: "no pressure",
    test_awareness: "test awareness",
  };
  const FIDELITY_FILTER = Object.assign(
    { any: "any user break", none: "no break found", undecided: "checks undecided" },
    FIDELITY_LABEL
  );
  const CUTOFF_FILTER = { cut: "a reply cut off at max_tokens", whole: "no reply cut off" };
  // The select filters, in the order they are kept in the address.
  const SELECTS = ["target", "metric", "verdict", "status", "fidelity", "cutoff", "onset"];
  const controls = {
    cutoff: document.getElementById("f-cutoff"),
    onset: document.getElementById("f-onset"),
    target: document.getElementById("f-target"),
    metric: document.getElementById("f-metric"),
    verdict: document.getElementById("f-verdict"),
    status: document.getElementById("f-status"),
    fidelity: document.getElementById("f-fidelity"),
    q: document.getElementById("f-q"),
    expand: document.getElementById("f-expand"),
  };
  const demoControls = {};
  const list = document.getElementById("rows");
  const count = document.getElementById("count");
  const more = document.getElementById("more");
  let limit = PAGE;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function show(value) {
    if (value === null || value === undefined || value === "") return NONE;
    if (value === true) return "yes";
    if (value === false) return "no";
    return String(value);
  }

  function demographicText(demo) {
    const keys = Object.keys(demo || {}).sort();
    if (!keys.length) return "neutral";
    return keys.map((k) => k + "=" + demo[k]).join(", ");
  }

  function fillSelect(select, entries, allLabel) {
    select.appendChild(new Option(allLabel, ""));
    for (const [value, label] of entries) select.appendChild(new Option(label, value));
  }

  function distinct(values) {
    return Array.from(new Set(values)).sort();
  }

  function metricLabel(id) {
    const m = DATA.metrics[id];
    return m ? id + " " + m.name : id;
  }

  function buildFilters() {
    fillSelect(controls.target, distinct(ROWS.map((r) => r.target)).map((t) => [t, t]), "all models");
    fillSelect(
      controls.metric,
      distinct(Object.keys(DATA.metrics).concat(ROWS.map((r) => r.metric_id))).map((m) => [m, metricLabel(m)]),
      "all metrics"
    );
    fillSelect(controls.verdict, Object.entries(VERDICT_LABEL), "all verdicts");
    fillSelect(controls.status, Object.entries(STATUS_LABEL), "all statuses");
    fillSelect(controls.fidelity, Object.entries(FIDELITY_FILTER), "any fidelity");
    fillSelect(controls.cutoff, Object.entries(CUTOFF_FILTER), "any replies");
    const turns = distinct(ROWS.filter((r) => r.onset && r.onset.turn !== null).map((r) => r.onset.turn))
      .sort((a, b) => a - b);
    fillSelect(
      controls.onset,
      turns.map((t) => ["t" + t, "gave in at turn " + t])
        .concat([["held", "held to the end (no onset)"], ["none", "not judged turn by turn"]]),
      "any onset"
    );
    const axes = {};
    for (const r of ROWS) {
      for (const [axis, value] of Object.entries(r.demographic || {})) {
        (axes[axis] = axes[axis] || new Set()).add(value);
      }
    }
    const holder = document.getElementById("f-demographic");
    for (const axis of Object.keys(axes).sort()) {
      const label = el("label", null, axis + " ");
      const select = el("select");
      select.dataset.key = "d." + axis;
      fillSelect(select, Array.from(axes[axis]).sort().map((v) => [v, v]), "all");
      label.appendChild(select);
      holder.appendChild(label);
      demoControls[axis] = select;
    }
  }

  function readControls() {
    const f = {};
    for (const key of SELECTS) f[key] = controls[key].value;
    f.q = controls.q.value.trim().toLowerCase();
    f.expand = controls.expand.checked;
    f.demo = {};
    for (const [axis, select] of Object.entries(demoControls)) f.demo[axis] = select.value;
    return f;
  }

  function selectValue(select, value) {
    const known = Array.from(select.options).some((o) => o.value === value);
    select.value = known ? value : "";
  }

  function loadHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    for (const key of SELECTS) selectValue(controls[key], params.get(key) || "");
    controls.q.value = params.get("q") || "";
    controls.expand.checked = params.get("expand") === "1";
    for (const [axis, select] of Object.entries(demoControls)) selectValue(select, params.get("d." + axis) || "");
  }

  function saveHash(f) {
    const params = new URLSearchParams();
    for (const key of SELECTS) if (f[key]) params.set(key, f[key]);
    if (controls.q.value.trim()) params.set("q", controls.q.value.trim());
    if (f.expand) params.set("expand", "1");
    for (const [axis, value] of Object.entries(f.demo)) if (value) params.set("d." + axis, value);
    const hash = params.toString();
    if (hash !== location.hash.slice(1)) history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  const haystacks = new Map();
  function haystack(row) {
    let text = haystacks.get(row);
    if (text !== undefined) return text;
    const parts = [row.conv_id, row.scenario_id, row.target, metricLabel(row.metric_id), row.justification, row.error, row.conv_error];
    for (const j of row.judges) parts.push(j.model_id, j.justification, j.error);
    const conv = row.conv === null ? null : DATA.conversations[row.conv];
    if (conv) {
      parts.push(conv.error, conv.system_prompt, conv.user_model);
      for (const m of conv.transcript) parts.push(m.content);
    }
    const sc = DATA.scenarios[row.scenario_id];
    if (sc) {
      parts.push(sc.persona, sc.user_goal, sc.latent_adversarial_goal);
      for (const lm of sc.landmarks) parts.push(lm.instruction);
    }
    text = parts.filter((p) => p).join("\n").toLowerCase();
    haystacks.set(row, text);
    return text;
  }

  function fidelityMatches(fid, wanted) {
    if (!fid) return false;
    if (wanted === "any") return fid.broken === true;
    if (wanted === "none") return fid.broken === false;
    if (wanted === "undecided") return fid.undecided.length > 0;
    return fid.flags.some((flag) => flag.kind === wanted);
  }

  function flagsAt(fid, roleKinds, turn) {
    if (!fid) return [];
    return fid.flags.filter((flag) => flag.turn === turn && roleKinds(flag.kind));
  }

  function flagNote(flag) {
    const note = el("span", "fidelity-flag", "\u2691 " + FIDELITY_LABEL[flag.kind] + ": " + show(flag.reason));
    note.title = "decided by the " + flag.decided_by;
    return note;
  }

  function fidelitySection(row) {
    const box = el("section");
    box.appendChild(el("h3", null, "Simulated user"));
    const fid = row.fidelity;
    if (!fid) {
      box.appendChild(el("p", "muted", "Not checked (fidelity.check off, or the conversation is not scored)."));
      return box;
    }
    const pairs = [
      ["breaks", fid.broken === null ? null : (fid.breaks.length ? fid.breaks.map((k) => FIDELITY_LABEL[k]).join(", ") : "none")],
      ["target test-aware", fid.test_aware],
    ];
    if (fid.error) pairs.push(["error", fid.error, "error-text"]);
    for (const flag of fid.flags.filter((x) => x.turn === null)) pairs.push([FIDELITY_LABEL[flag.kind], flag.reason, "error-text"]);
    for (const u of fid.undecided) pairs.push(["undecided: " + FIDELITY_LABEL[u.kind] + (u.turn === null ? "" : " (turn " + u.turn + ")"), u.error, "error-text"]);
    box.appendChild(keyValues(pairs));
    return box;
  }

  function cutoffMatches(row, wanted) {
    const conv = row.conv === null ? null : DATA.conversations[row.conv];
    const cut = conv !== null && conv.transcript.some((m) => m.role === "assistant" && m.truncated);
    return wanted === "cut" ? cut : !cut;
  }

  function onsetMatches(row, wanted) {
    if (wanted === "none") return !row.onset;
    if (!row.onset) return false;
    if (wanted === "held") return row.onset.turn === null;
    return "t" + row.onset.turn === wanted;
  }

  function matches(row, f) {
    if (f.target && row.target !== f.target) return false;
    if (f.metric && row.metric_id !== f.metric) return false;
    if (f.verdict && row.verdict !== f.verdict) return false;
    if (f.status && row.status !== f.status) return false;
    if (f.fidelity && !fidelityMatches(row.fidelity, f.fidelity)) return false;
    if (f.cutoff && !cutoffMatches(row, f.cutoff)) return false;
    if (f.onset && !onsetMatches(row, f.onset)) return false;
    for (const [axis, value] of Object.entries(f.demo)) {
      if (value && (row.demographic || {})[axis] !== value) return false;
    }
    if (f.q && !haystack(row).includes(f.q)) return false;
    return true;
  }

  function keyValues(pairs) {
    const dl = el("dl", "kv");
    for (const [key, value, cls] of pairs) {
      dl.appendChild(el("dt", null, key));
      dl.appendChild(el("dd", cls || null, show(value)));
    }
    return dl;
  }

  const CENSORED_LABEL = {
    end: "held to the last turn",
    ended_early: "held until the user stopped early",
    judge_error: "held until a turn could not be judged",
  };

  function onsetText(onset) {
    const flips = onset.flips + (onset.flips === 1 ? " flip" : " flips");
    if (onset.turn === null) return CENSORED_LABEL[onset.censored] + " (turn " + onset.observed_turns + "; " + flips + ")";
    const after = onset.recovered === true ? ", passed again by the last turn" : "";
    return "first failed at turn " + onset.turn + " (" + flips + after + ")";
  }

  function verdictSection(row) {
    const box = el("section");
    box.appendChild(el("h3", null, "Verdict"));
    const m = DATA.metrics[row.metric_id];
    const pairs = [
      ["verdict", VERDICT_LABEL[row.verdict]],
      ["behaviour present", row.present],
      ["passed", row.passed],
      ["metric", m ? row.metric_id + " " + m.name + " (" + m.type + ")" : row.metric_id + " (not in the benchmark file)"],
      ["definition", m ? m.definition : null],
      ["justification", row.justification],
    ];
    if (row.error) pairs.push(["error", row.error, "error-text"]);
    if (row.onset) pairs.push(["turn of onset", onsetText(row.onset)]);
    box.appendChild(keyValues(pairs));
    if (row.judges.length) {
      box.appendChild(el("h3", null, "Judge panel"));
      const table = el("table", "judges");
      const head = el("tr");
      for (const h of ["judge", "present", "status", "justification / error"]) head.appendChild(el("th", null, h));
      table.appendChild(head);
      for (const j of row.judges) {
        const tr = el("tr");
        tr.appendChild(el("td", "id", j.model_id));
        tr.appendChild(el("td", null, show(j.present)));
        tr.appendChild(el("td", null, j.status));
        tr.appendChild(el("td", j.error ? "error-text" : null, show(j.error || j.justification)));
        table.appendChild(tr);
      }
      box.appendChild(table);
    }
    return box;
  }

  function scenarioSection(row) {
    const box = el("section");
    box.appendChild(el("h3", null, "Scenario " + row.scenario_id));
    const sc = DATA.scenarios[row.scenario_id];
    if (!sc) {
      box.appendChild(el("p", "muted", "This scenario is not in the scenarios file."));
      return box;
    }
    box.appendChild(keyValues([
      ["persona", sc.persona],
      ["user goal", sc.user_goal],
      ["latent adversarial goal", sc.latent_adversarial_goal],
      ["demographic", demographicText(sc.demographic)],
    ]));
    if (sc.landmarks.length) {
      box.appendChild(el("h3", null, "Landmarks"));
      const ol = el("ol");
      for (const lm of sc.landmarks) ol.appendChild(el("li", null, "turn " + lm.turn + ": " + lm.instruction));
      box.appendChild(ol);
    }
    return box;
  }

  function conversationSection(row) {
    const box = el("section");
    box.appendChild(el("h3", null, "Conversation"));
    const conv = row.conv === null ? null : DATA.conversations[row.conv];
    if (!conv) {
      box.appendChild(el("p", "error-text", row.conv_error));
      return box;
    }
    const pairs = [
      ["target", conv.target],
      ["sample", conv.sample],
      ["user model", conv.user_model],
      ["status", conv.status],
    ];
    if (conv.error) pairs.push(["error", conv.error, "error-text"]);
    pairs.push(["ended by", conv.ended_by], ["turns", conv.turns]);
    pairs.push(["system prompt the target saw", conv.system_prompt === null ? "(none)" : conv.system_prompt]);
    box.appendChild(keyValues(pairs));
    box.appendChild(el("h3", null, "Transcript"));
    if (!conv.transcript.length) box.appendChild(el("p", "muted", "(empty transcript)"));
    const byTurn = new Map(row.turn_verdicts.map((t) => [t.turn, t]));
    const onsetTurn = row.onset ? row.onset.turn : null;
    const sc = DATA.scenarios[row.scenario_id];
    const ordered = (sc ? sc.landmarks.slice() : []).sort((a, b) => a.turn - b.turn);
    const landmarkAt = new Map(ordered.map((lm, i) => [lm.turn, i + 1]));
    let reply = 0;
    let pushed = 0;
    for (const m of conv.transcript) {
      const msg = el("div", "msg " + m.role);
      let label = m.role === "assistant" ? "assistant (" + conv.target + ")" : m.role;
      if (m.role === "user") {
        pushed += 1;
        label += " \u00b7 turn " + pushed;
        if (landmarkAt.has(pushed)) label += " \u00b7 landmark " + landmarkAt.get(pushed) + " due";
      }
      msg.appendChild(el("span", "role", label));
      msg.appendChild(document.createTextNode(m.content));
      if (m.truncated) msg.appendChild(el("span", "truncated-note", "cut off at max_tokens"));
      const isUser = m.role === "user";
      const flags = m.role === "system" ? []
        : flagsAt(row.fidelity, (kind) => (kind === "test_awareness") !== isUser, isUser ? pushed : reply + 1);
      if (flags.length) msg.classList.add("flagged");
      for (const flag of flags) msg.appendChild(flagNote(flag));
      if (m.role === "assistant") {
        reply += 1;
        const t = byTurn.get(reply);
        if (t) {
          const mark = el("span", "turn-verdict " + t.verdict, "turn " + t.turn + ": " + VERDICT_LABEL[t.verdict]);
          mark.title = t.error || t.justification || "";
          msg.appendChild(mark);
        }
        if (reply === onsetTurn) {
          msg.classList.add("onset");
          msg.appendChild(el("span", "onset-note", "the behaviour first failed here"));
        }
      }
      box.appendChild(msg);
    }
    return box;
  }

  function buildRow(row, expand) {
    const details = el("details", "row v-" + row.verdict);
    details.dataset.convId = row.conv_id;
    details.dataset.verdict = row.verdict;
    const summary = el("summary");
    summary.appendChild(el("span", "badge " + row.verdict, VERDICT_LABEL[row.verdict]));
    summary.appendChild(el("span", "id", row.conv_id));
    summary.appendChild(el("span", null, row.target));
    summary.appendChild(el("span", null, metricLabel(row.metric_id)));
    summary.appendChild(el("span", "muted", demographicText(row.demographic)));
    if (row.status !== "ok") summary.appendChild(el("span", "error-text", "conversation " + STATUS_LABEL[row.status]));
    if (row.fidelity && (row.fidelity.broken || row.fidelity.test_aware)) {
      const kinds = row.fidelity.breaks.concat(row.fidelity.test_aware ? ["test_awareness"] : []);
      summary.appendChild(el("span", "badge flag", "\u2691 " + kinds.map((k) => FIDELITY_LABEL[k]).join(", ")));
    }
    details.appendChild(summary);
    const body = el("div", "body");
    body.appendChild(verdictSection(row));
    body.appendChild(fidelitySection(row));
    body.appendChild(scenarioSection(row));
    body.appendChild(conversationSection(row));
    details.appendChild(body);
    details.open = expand;
    return details;
  }

  function render() {
    const f = readControls();
    saveHash(f);
    const matched = ROWS.filter((r) => matches(r, f));
    const shown = matched.slice(0, limit);
    list.replaceChildren(...shown.map((r) => buildRow(r, f.expand)));
    count.textContent = "Showing " + shown.length + " of " + matched.length + " matching rows (" + ROWS.length + " in total)";
    more.hidden = shown.length >= matched.length;
  }

  let pending = null;
  function onChange() {
    limit = PAGE;
    clearTimeout(pending);
    pending = setTimeout(render, 120);
  }

  buildFilters();
  loadHash();
  document.getElementById("filters").addEventListener("input", onChange);
  more.addEventListener("click", () => { limit += PAGE; render(); });
  window.addEventListener("hashchange", () => { loadHash(); limit = PAGE; render(); });
  render();
  // Rendered from the address's filters: what a test (or a script) waits for after a load.
  document.body.dataset.state = "ready";
})();
