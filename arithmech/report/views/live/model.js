/* The embedded model in plain JavaScript: tokenizer, forward pass, path patching, mean ablation.
 *
 * Why not a graph runtime (onnxruntime-web)? Every view of the live explorer is an intervention inside
 * the forward pass: read each head's output before W_O at END, replace one head's slice with its value
 * on the counterfactual while every later head stays frozen (path patching, arithmech.methods.patching),
 * replace the key heads' slices with identify's means (knockout), read one head's attention row and
 * each MLP's write. An exported graph gives inputs and outputs; each of these would need its own
 * exported graph with extra inputs, and a 4M-parameter model does not need a runtime to be fast.
 *
 * Numbers: the weights are the safetensors file's own float16 values, widened exactly to float32;
 * every activation is a float64 array (JavaScript numbers), so the page differs from PyTorch's float32
 * run by PyTorch's rounding alone (tests/book/test_live_explorer.py measures it).
 *
 * Shapes: T tokens, d model width, H heads of size dh, f MLP width, V vocabulary; a "row" is one
 * position's vector. Weight matrices are nn.Linear's (out, in), row-major.
 */
(function (root) {
  "use strict";

  // ---------------------------------------------------------------------------- weights
  function halfToFloat(h) {                       // IEEE 754 binary16 -> number (exact)
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e === 0) return s * m * Math.pow(2, -24);
    if (e === 31) return m ? NaN : s * Infinity;
    return s * (1 + m / 1024) * Math.pow(2, e - 15);
  }

  function decode(payload) {
    const bin = atob(payload.data), n = bin.length, bytes = new Uint8Array(n);
    for (let i = 0; i < n; i++) bytes[i] = bin.charCodeAt(i);
    const half = new Uint16Array(bytes.buffer), table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) table[i] = halfToFloat(i);
    const W = {};
    for (const [name, [offset, shape]] of Object.entries(payload.tensors)) {
      const size = shape.reduce((a, b) => a * b, 1), out = new Float32Array(size);
      for (let i = 0; i < size; i++) out[i] = table[half[offset + i]];
      W[name] = out;
    }
    return W;
  }

  // ---------------------------------------------------------------------------- tokenizer
  // The tokenizer.json pipeline: split on whitespace, isolate every character that is neither a word
  // character nor a space ([^\w\s]), isolate every digit, look each piece up (WordLevel), put <s> first.
  const PUNCT = /([^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\s])/u;
  const DIGIT = /(\p{N})/u;

  function tokenize(model, text) {
    const pieces = [];                           // [piece, start, end] with offsets into text
    const re = /\S+/g;
    let m;
    while ((m = re.exec(text)) !== null) {
      let at = m.index;
      for (const p of m[0].split(PUNCT)) {
        for (const q of p.split(DIGIT)) {
          if (q) pieces.push([q, at, at + q.length]);
          at += q.length;
        }
      }
    }
    const ids = [model.bos], tokens = ["<s>"], spans = [null], unknown = [];
    for (const [p, a, b] of pieces) {
      const id = Object.prototype.hasOwnProperty.call(model.vocab, p) ? model.vocab[p] : model.unk;
      if (id === model.unk || model.special.includes(id)) unknown.push(p);
      ids.push(id); tokens.push(p); spans.push([a, b]);
    }
    return {ids, tokens, spans, unknown};
  }

  // ---------------------------------------------------------------------------- primitives
  function linear(x, T, W, nOut, nIn) {          // x (T, nIn) @ W(nOut, nIn)^T -> (T, nOut)
    const y = new Float64Array(T * nOut);
    for (let t = 0; t < T; t++) {
      const xo = t * nIn, yo = t * nOut;
      for (let o = 0; o < nOut; o++) {
        const wo = o * nIn;
        let s = 0;
        for (let i = 0; i < nIn; i++) s += W[wo + i] * x[xo + i];
        y[yo + o] = s;
      }
    }
    return y;
  }

  function rmsnorm(x, T, d, w, eps) {            // Llama's RMSNorm, per row
    const y = new Float64Array(T * d);
    for (let t = 0; t < T; t++) {
      let ss = 0;
      for (let i = 0; i < d; i++) ss += x[t * d + i] * x[t * d + i];
      const r = 1 / Math.sqrt(ss / d + eps);
      for (let i = 0; i < d; i++) y[t * d + i] = w[i] * (x[t * d + i] * r);
    }
    return y;
  }

  function mlp(model, l, x, T) {                  // down(silu(gate(norm(x))) * up(norm(x))), (T, d)
    const c = model.config, W = model.W, p = `model.layers.${l}.`;
    const n = rmsnorm(x, T, c.d, W[p + "post_attention_layernorm.weight"], c.eps);
    const g = linear(n, T, W[p + "mlp.gate_proj.weight"], c.f, c.d);
    const u = linear(n, T, W[p + "mlp.up_proj.weight"], c.f, c.d);
    for (let i = 0; i < g.length; i++) g[i] = (g[i] / (1 + Math.exp(-g[i]))) * u[i];
    return linear(g, T, W[p + "mlp.down_proj.weight"], c.d, c.f);
  }

  function rope(x, T, H, dh, theta) {             // rotate_half RoPE, in place, positions 0..T-1
    const half = dh / 2;
    for (let t = 0; t < T; t++)
      for (let j = 0; j < half; j++) {
        const a = t / Math.pow(theta, (2 * j) / dh), c = Math.cos(a), s = Math.sin(a);
        for (let h = 0; h < H; h++) {
          const o = t * H * dh + h * dh, x1 = x[o + j], x2 = x[o + j + half];
          x[o + j] = x1 * c - x2 * s;
          x[o + j + half] = x2 * c + x1 * s;
        }
      }
  }

  function row(x, t, d) { return x.subarray(t * d, (t + 1) * d); }

  function logitsOf(model, r, ids) {              // final norm, then W_U rows `ids` (all when null)
    const c = model.config, n = rmsnorm(r, 1, c.d, model.W["model.norm.weight"], c.eps), U = model.W["lm_head.weight"];
    const rows = ids || Array.from({length: c.V}, (_, i) => i);
    return rows.map(v => { let s = 0; for (let i = 0; i < c.d; i++) s += U[v * c.d + i] * n[i]; return s; });
  }

  // ---------------------------------------------------------------------------- forward
  /* The whole prompt, keeping what the views need at END (the last position): per layer the heads'
   * outputs before W_O (z), the attention output, the residual before the MLP (resid_mid), the MLP's
   * output, each head's attention row; and the END logits. `ablate`: {layer: [[head, meanRow(dh)], ...]}
   * replaces those heads' z at END (mean ablation at END, as identify's knockout at END). */
  function forward(model, ids, ablate) {
    const c = model.config, W = model.W, T = ids.length, d = c.d, H = c.H, dh = c.dh;
    if (T > c.maxPositions) throw new Error(`${T} tokens: the model takes at most ${c.maxPositions}`);
    let x = new Float64Array(T * d);
    const E = W["model.embed_tokens.weight"];
    ids.forEach((id, t) => { for (let i = 0; i < d; i++) x[t * d + i] = E[id * d + i]; });
    const out = {z: [], attnOut: [], residMid: [], mlpOut: [], attention: [], T};
    for (let l = 0; l < c.L; l++) {
      const p = `model.layers.${l}.self_attn.`;
      const n = rmsnorm(x, T, d, W[`model.layers.${l}.input_layernorm.weight`], c.eps);
      const q = linear(n, T, W[p + "q_proj.weight"], H * dh, d), k = linear(n, T, W[p + "k_proj.weight"], H * dh, d);
      const v = linear(n, T, W[p + "v_proj.weight"], H * dh, d);
      rope(q, T, H, dh, c.theta); rope(k, T, H, dh, c.theta);
      const z = new Float64Array(T * H * dh), att = [], scale = 1 / Math.sqrt(dh), w = new Float64Array(T);
      for (let h = 0; h < H; h++)
        for (let t = 0; t < T; t++) {
          let mx = -Infinity;
          for (let s = 0; s <= t; s++) {
            let a = 0;
            for (let i = 0; i < dh; i++) a += q[(t * H + h) * dh + i] * k[(s * H + h) * dh + i];
            w[s] = a * scale; if (w[s] > mx) mx = w[s];
          }
          let sum = 0;
          for (let s = 0; s <= t; s++) { w[s] = Math.exp(w[s] - mx); sum += w[s]; }
          for (let s = 0; s <= t; s++) {
            w[s] /= sum;
            for (let i = 0; i < dh; i++) z[(t * H + h) * dh + i] += w[s] * v[(s * H + h) * dh + i];
          }
          if (t === T - 1) att.push(Array.from(w.subarray(0, T)));
        }
      for (const [h, mean] of (ablate && ablate[l]) || [])
        for (let i = 0; i < dh; i++) z[((T - 1) * H + h) * dh + i] = mean[i];
      const o = linear(z, T, W[p + "o_proj.weight"], d, H * dh);
      for (let i = 0; i < x.length; i++) x[i] += o[i];
      out.residMid.push(Float64Array.from(row(x, T - 1, d)));
      const m = mlp(model, l, x, T);
      for (let i = 0; i < x.length; i++) x[i] += m[i];
      out.z.push(Float64Array.from(row(z, T - 1, H * dh)));
      out.attnOut.push(Float64Array.from(row(o, T - 1, d)));
      out.mlpOut.push(Float64Array.from(row(m, T - 1, d)));
      out.attention.push(att);
    }
    out.final = Float64Array.from(row(x, T - 1, d));
    out.logits = logitsOf(model, out.final, null);
    return out;
  }

  // ---------------------------------------------------------------------------- path patching
  /* Every head's path-patching effect on the logit of `answer` (arithmech.methods.patching, its fast
   * method): head j of layer i takes its counterfactual value at END, every later head is frozen at
   * its clean value, the MLPs recompute; effect = (logit_p - logit_o) / logit_o, logit_o the clean
   * run's logit. Returns effects[i][j] and the patched logits. */
  function pathPatch(model, clean, corrupt, answer) {
    const c = model.config, d = c.d, H = c.H, dh = c.dh, Wout = l => model.W[`model.layers.${l}.self_attn.o_proj.weight`];
    const logitO = clean.logits[answer], effects = [], patched = [];
    for (let i = 0; i < c.L; i++) {
      const Wo = Wout(i), eRow = [], pRow = [];
      for (let j = 0; j < H; j++) {
        const r = Float64Array.from(clean.residMid[i]);
        let changed = false;
        for (let a = 0; a < dh; a++) {
          const dz = corrupt.z[i][j * dh + a] - clean.z[i][j * dh + a];
          if (dz === 0) continue;
          changed = true;
          for (let o = 0; o < d; o++) r[o] += Wo[o * H * dh + j * dh + a] * dz;
        }
        let lp = logitO;
        if (changed) {
          let m = mlp(model, i, r, 1);
          for (let o = 0; o < d; o++) r[o] += m[o];
          for (let k = i + 1; k < c.L; k++) {
            for (let o = 0; o < d; o++) r[o] += clean.attnOut[k][o];
            m = mlp(model, k, r, 1);
            for (let o = 0; o < d; o++) r[o] += m[o];
          }
          lp = logitsOf(model, r, [answer])[0];
        }
        pRow.push(lp); eRow.push((lp - logitO) / logitO);
      }
      effects.push(eRow); patched.push(pRow);
    }
    return {effects, patched, logitO};
  }

  // ---------------------------------------------------------------------------- the views
  function softmaxTop(logits, k) {
    const mx = Math.max(...logits), e = logits.map(v => Math.exp(v - mx)), s = e.reduce((a, b) => a + b, 0);
    return e.map((v, i) => [i, v / s]).sort((a, b) => b[1] - a[1]).slice(0, k);
  }

  function mlpNumbers(model, run, k) {            // Fig. 6c: number tokens closest to norm_f(MLP write) at END
    const c = model.config, U = model.W["lm_head.weight"], unit = v => { const n = Math.hypot(...v); return v.map(x => x / n); };
    return run.mlpOut.map(m => {
      const n = unit(Array.from(rmsnorm(m, 1, c.d, model.W["model.norm.weight"], c.eps)));
      return model.numbers.map(([id, label]) => {
        const w = unit(Array.from(U.subarray(id * c.d, (id + 1) * c.d)));
        return [label, n.reduce((s, x, i) => s + x * w[i], 0)];
      }).sort((a, b) => b[1] - a[1]).slice(0, k);
    });
  }

  /* The identify counterfactual of a typed prompt: every operator token (symbol or word of the
   * templates: +, plus, sum, ...) replaced, symbols by `symbol` and words by `word` (neutral ones of
   * arithmech.data.templates). Returns the text, or null when the prompt has no operator. */
  function counterfactual(model, text, tok) {
    let out = "", at = 0, found = false;
    tok.spans.forEach((span, t) => {
      if (!span || !model.operators.includes(tok.tokens[t].toLowerCase())) return;
      const sym = !/\p{L}/u.test(tok.tokens[t]);
      out += text.slice(at, span[0]) + (sym ? model.neutral.symbol : model.neutral.word);
      at = span[1]; found = true;
    });
    return found ? out + text.slice(at) : null;
  }

  class Refusal extends Error {}

  /* Everything the page shows for one prompt; throws a Refusal (one sentence) when it cannot be scored. */
  function analyze(model, page, prompt, cfText) {
    const c = model.config, t0 = performance.now();
    const shown = s => JSON.stringify(s.length > 40 ? s.slice(0, 40) + "…" : s);
    if (!prompt.trim()) throw new Refusal("Type a prompt first, e.g. 4 + 3 =.");
    if (prompt.length + (cfText || "").length > 2000)
      throw new Refusal(`This prompt is ${prompt.length} characters long; the embedded model reads at most ${c.maxPositions} tokens, so it cannot be scored.`);
    for (const text of [prompt, cfText || ""]) {
      const special = model.specialTexts.find(s => text.includes(s));
      if (special) throw new Refusal(`${shown(special)} is one of the tokenizer's special tokens; type the prompt without it.`);
    }
    const tok = tokenize(model, prompt);
    if (tok.unknown.length)
      throw new Refusal(`The embedded model has no token for ${tok.unknown.slice(0, 3).map(shown).join(", ")}: ` +
                        "its vocabulary holds the templates' words, digits and punctuation only, so this prompt cannot be scored.");
    if (tok.ids.length > c.maxPositions)
      throw new Refusal(`This prompt is ${tok.ids.length} tokens long; the embedded model reads at most ${c.maxPositions}, so it cannot be scored.`);
    const given = cfText && cfText.trim();
    const cf = given ? cfText : counterfactual(model, prompt, tok);
    if (cf === null)
      throw new Refusal("This prompt has no operator (+, -, *, /, plus, sum, ...) to replace, so it has no counterfactual: type one in the second box.");
    const ctok = tokenize(model, cf);
    if (ctok.unknown.length)
      throw new Refusal(`The counterfactual holds ${ctok.unknown.slice(0, 3).map(shown).join(", ")}, which the embedded model has no token for.`);
    if (ctok.ids.length !== tok.ids.length)
      throw new Refusal(`The counterfactual is ${ctok.ids.length} tokens long and the prompt ${tok.ids.length}: path patching needs both the same length.`);
    const clean = forward(model, tok.ids, null), corrupt = forward(model, ctok.ids, null);
    const top = softmaxTop(clean.logits, 5), answer = top[0][0];
    const pp = pathPatch(model, clean, corrupt, answer);
    const ablate = {};
    for (const [l, h] of page.keyHeads)
      (ablate[l] = ablate[l] || []).push([h, page.means[l].slice(h * c.dh, (h + 1) * c.dh)]);
    const ko = page.keyHeads.length ? forward(model, tok.ids, ablate) : null;
    const name = i => model.tokens[i];
    return {
      prompt, counterfactual: cf, counterfactualGiven: !!given, tokens: tok.tokens, ids: tok.ids,
      cfTokens: ctok.tokens, answer, answerToken: name(answer), logits: clean.logits,
      top: top.map(([i, p]) => [name(i), p]), effects: pp.effects, patchedLogits: pp.patched, logitO: pp.logitO,
      knockoutLogits: ko ? ko.logits : null, knockoutTop: ko ? softmaxTop(ko.logits, 5).map(([i, p]) => [name(i), p]) : null,
      attention: clean.attention, numbers: mlpNumbers(model, clean, 3), ms: performance.now() - t0
    };
  }

  function load(payload) {
    const W = decode(payload), cfg = payload.config, vocab = {};
    payload.tokens.forEach((t, i) => { vocab[t] = i; });
    return {W, vocab, tokens: payload.tokens, unk: cfg.unk, bos: cfg.bos, special: cfg.special,
            specialTexts: cfg.special.map(i => payload.tokens[i]),
            numbers: payload.numbers, operators: payload.operators, neutral: payload.neutral,
            config: {d: cfg.hidden_size, f: cfg.intermediate_size, H: cfg.num_attention_heads, dh: cfg.head_dim,
                     L: cfg.num_hidden_layers, V: cfg.vocab_size, eps: cfg.rms_norm_eps, theta: cfg.rope_theta,
                     maxPositions: cfg.max_position_embeddings}};
  }

  root.ArithmechModel = {load, tokenize, forward, pathPatch, analyze, counterfactual, Refusal};
})(window);
