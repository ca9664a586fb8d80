/* The live explorer's controls and views (the Explorer page of the book; arithmech.report.views.live_explorer).
 *
 * Reads the model (window.ARITHMECH_EMBEDDED_MODEL, a <script> next to this one: fetch() of file:// is
 * blocked, a script is not) and the page's data (<script type="application/json" id="arithmech-live-data">:
 * the heads to knock out and identify's means), computes with model.js and draws with DOM nodes.
 * Every text a reader typed reaches the page through textContent, never as markup.
 * window.arithmechLive.analyze(prompt, counterfactual) returns the numbers the views draw (the tests read them).
 */
(function () {
  "use strict";
  const M = window.ArithmechModel;
  const box = document.getElementById("arithmech-live");
  if (!box || !M) return;

  function el(tag, attrs, ...kids) {              // a DOM node; strings become text nodes
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
    }
    for (const c of kids) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const pct = v => (100 * v).toFixed(1) + "%";
  const head = (l, h) => `head ${l}.${h}`;

  let model = null, page = null, last = null, chosen = null;
  try {
    page = JSON.parse(document.getElementById("arithmech-live-data").textContent);
    model = M.load(window.ARITHMECH_EMBEDDED_MODEL);
  } catch (e) {
    box.textContent = "The live explorer could not load the embedded model: " + e.message;
    console.warn(e);
    return;
  }

  const prompt = el("input", {type: "text", class: "arithmech-live-prompt", "aria-label": "prompt", size: "28"});
  prompt.value = page.prompt;
  const cf = el("input", {type: "text", class: "arithmech-live-counterfactual", size: "28",
                          "aria-label": "counterfactual (optional)", placeholder: "counterfactual (optional: operator replaced)"});
  const run = el("button", {type: "button", class: "arithmech-live-run"}, "run");
  const status = el("p", {class: "arithmech-live-status", role: "status", "aria-live": "polite"});
  const views = el("div", {class: "arithmech-live-views"});
  box.replaceChildren(el("div", {class: "arithmech-live-controls"}, prompt, " ", cf, " ", run), status, views);

  function table(headers, rows) {
    return el("table", {class: "arithmech-table"},
              el("thead", {}, el("tr", {}, ...headers.map(h => el("th", {}, h)))),
              el("tbody", {}, ...rows.map(r => el("tr", {}, ...r.map(c => el("td", {}, c))))));
  }

  function colour(v, scale) {                     // negative (lowers the answer): red; positive: blue
    const a = Math.min(1, Math.abs(v) / scale), mix = x => Math.round(255 - a * (255 - x));
    return v < 0 ? `rgb(255,${mix(80)},${mix(70)})` : `rgb(${mix(70)},${mix(120)},255)`;
  }

  function effectsMap(r) {
    const scale = Math.max(0.01, ...r.effects.flat().map(Math.abs));
    const key = new Set(page.keyHeads.map(([l, h]) => `${l}.${h}`));
    const grid = el("div", {class: "arithmech-live-map", role: "grid",
                            style: `display:grid;grid-template-columns:4em repeat(${r.effects[0].length},minmax(0,1fr));gap:2px;font-size:0.75em`});
    grid.append(el("div", {}, ""), ...r.effects[0].map((_, h) => el("div", {style: "text-align:center"}, `H${h}`)));
    r.effects.forEach((rowE, l) => {
      grid.append(el("div", {}, `layer ${l}`));
      rowE.forEach((v, h) => {
        const c = el("button", {type: "button", class: "arithmech-live-cell", "data-head": `${l}.${h}`,
                                title: `${head(l, h)}: ${pct(v)}${key.has(`${l}.${h}`) ? " (" + page.keyLabel + " head)" : ""}; click for its attention`,
                                style: `background:${colour(v, scale)};border:${key.has(`${l}.${h}`) ? "2px solid #222" : "1px solid #ccc"};padding:2px 0;cursor:pointer`},
                       (100 * v).toFixed(1));
        c.addEventListener("click", () => { chosen = [l, h]; drawAttention(); });
        grid.append(c);
      });
    });
    return grid;
  }

  function drawAttention() {
    const spot = views.querySelector(".arithmech-live-attention");
    if (!spot || !last) return;
    const [l, h] = chosen, w = last.attention[l][h];
    spot.replaceChildren(el("p", {}, el("strong", {}, `Attention of ${head(l, h)} from the last token`),
                            " (click another head in the map above):"),
      el("div", {class: "arithmech-live-bars"}, ...last.tokens.map((t, i) => el("div", {style: "display:flex;align-items:center;gap:0.5em;font-size:0.8em"},
        el("span", {style: "width:7em;text-align:right;overflow-wrap:anywhere"}, t),
        el("span", {style: `display:inline-block;height:0.8em;background:#4c78a8;width:${(12 * w[i]).toFixed(2)}em`}),
        el("span", {}, w[i].toFixed(3))))));
  }

  function draw(r) {
    last = r;
    if (!chosen) chosen = page.keyHeads[0] || [0, 0];
    const topRows = r.top.map(([t, p], i) => [String(i + 1), `${t}  ${pct(p)}`,
                                              r.knockoutTop ? `${r.knockoutTop[i][0]}  ${pct(r.knockoutTop[i][1])}` : "–"]);
    views.replaceChildren(
      el("p", {}, "prompt: ", el("code", {class: "arithmech-live-shown"}, r.prompt), " — counterfactual",
         r.counterfactualGiven ? " (typed): " : " (operator replaced, as identify does): ",
         el("code", {class: "arithmech-live-shown-cf"}, r.counterfactual)),
      el("p", {}, el("strong", {}, "Top-5 next tokens"), `, intact and with the ${page.keyLabel} ${page.keyHeads.length === 1 ? "head" : "heads"} ` +
         `(${page.keyHeads.map(([l, h]) => head(l, h)).join(", ")}) knocked out`),
      el("div", {class: "arithmech-live-top"}, table(["rank", "intact", "knocked out"], topRows)),
      el("p", {}, el("strong", {}, "Path-patching effect of every head"),
         ` on the logit of “${r.answerToken}” (the model's top-1 here), in % of it (Fig. 2; outlined: the knocked-out heads):`),
      effectsMap(r),
      el("div", {class: "arithmech-live-attention"}),
      el("p", {}, el("strong", {}, "Number tokens each MLP writes"), " at the last token (cosine with W_U, Fig. 6c):"),
      el("div", {class: "arithmech-live-numbers"},
         table(["layer", "1st", "2nd", "3rd"], r.numbers.map((ns, l) => [String(l), ...ns.map(([t, c]) => `${t}  ${c.toFixed(2)}`)]))));
    drawAttention();
  }

  function analyze(p, c) { return M.analyze(model, page, p, c); }

  function go() {
    try {
      const r = analyze(prompt.value, cf.value);
      draw(r);
      status.textContent = `“${r.answerToken}” is the model's next token; computed in ${Math.round(r.ms)} ms in this browser.` +
        (r.logitO > 0 ? "" : " Its logit is not positive here, so a relative change flips sign: read the map's colours with care.");
    } catch (e) {
      if (!(e instanceof M.Refusal)) console.warn(e);
      last = null;
      views.replaceChildren();
      status.textContent = e instanceof M.Refusal ? e.message : "This prompt could not be scored: " + e.message;
    }
  }
  run.addEventListener("click", go);
  for (const input of [prompt, cf]) input.addEventListener("keydown", e => { if (e.key === "Enter") go(); });

  window.arithmechLive = {                        // for the tests: the numbers behind the views
    analyze: (p, c) => {
      const r = analyze(p, c || "");
      return {...r, logits: Array.from(r.logits), knockoutLogits: r.knockoutLogits && Array.from(r.knockoutLogits)};
    },
    tokenize: t => M.tokenize(model, t), ready: true
  };
  go();
})();
