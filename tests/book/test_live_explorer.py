"""The live explorer computes what PyTorch computes: headless Chromium, network cut, opens the page from
``file://`` (:func:`arithmech.report.views.live_explorer.write_page`, the book's assets and HTML in the book's
layout) and the page's numbers are compared with the embedded model run by PyTorch (float32) on prompts of
every template family and on prompts the book never precomputed: the token ids, the END logits, every head's
path-patching effect (PyTorch's *reference* method: one hooked forward per head, Algorithm 1), the logits
with the key heads mean-ablated at END (identify's means) and the clicked head's attention row.
Then a reader's hostile or impossible input: shown as text, one sentence, the page still usable. Marked ``slow``.
"""
from __future__ import annotations

import statistics

import pytest
import torch
from browser import Browser, require_browser

from arithmech.core.models import load_model
from arithmech.data import pairs
from arithmech.methods.ablation.knockout import activations
from arithmech.methods.ablation.pool import pool_prompts
from arithmech.methods.attention import end_rows
from arithmech.methods.explorer import mean_ablation
from arithmech.methods.mlp import layer_top_numbers
from arithmech.methods.patch_inputs import Inputs
from arithmech.methods.patching import end_cache, path_patch_reference
from arithmech.report.views import live_explorer

pytestmark = pytest.mark.slow
TOL = 1e-4                    # the required bound on |page - PyTorch|, logits and effects
KEY = [(0, 0), (0, 3), (3, 1)]                 # heads the page knocks out here (any heads test the mechanism)
PARAMS = {"tasks": ["addition", "subtraction", "multiplication", "division"], "heldout": "fig10",
          "transfer": True, "pool_size": 4, "seed": 0, "answer_token": "last-digit", "shots": 0}
# Never precomputed: free phrasings, other spacing, a typed counterfactual, three-digit operands.
FREE = [("12 + 35 =", ""), ("3+4=", ""), ("The sum of 4 and 9 is", ""), ("Q: What is 7 times 8? A:", ""),
        ("5 plus 2 equals to", ""), ("9 - 6 =", "9 # 6 ="), ("81 / 9 =", ""), ("123 + 456 =", ""),
        ("2 * 3 * 4 =", ""), ("Q: How much is 60 over 12? A:", "Q: How much is 60 null 12? A:")]


class PoolMean:
    """A MeanSource giving every position the page's END means (mean ablation at END reads only END)."""

    def __init__(self, z):
        self.z = z

    def lookup(self, key, seq):
        return self.z[:, None].expand(-1, seq, -1), None


@pytest.fixture(scope="module")
def model():
    net, tok, _ = load_model("embedded", dtype="float32", attn_implementation="eager")
    return net, tok


@pytest.fixture(scope="module")
def means(model):
    """identify's END means from a small pool (identify's recorded parameters, as ``run.json`` holds them)."""
    net, tok = model
    return live_explorer.identify_end_means(net, tok, PARAMS)[0]


@pytest.fixture(scope="module")
def page(tmp_path_factory, means):
    require_browser()
    path = live_explorer.write_page(tmp_path_factory.mktemp("live"), live_explorer.page_data(means, KEY))
    with Browser() as b:
        rep = b.open(path)
        assert not rep.requests and not rep.errors, (rep.requests, rep.errors)
        b.driver.implicitly_wait(0)
        yield b, path


def prompts(tok) -> list[tuple[str, str]]:
    """Two drawn pairs per family (the precomputed page's kind: X_r and identify's X_c) and the free ones."""
    drawn = []
    for fam in ("equation", "statement", "qa", "time-span", "accumulation"):
        tpls = [t for t in pairs.select_templates("all") if t.family == fam]
        drawn += [(s.clean, s.corrupt) for s in pairs.make_pairs(tok, tpls, n=2, seed=7, draw=pairs.Draw("last-digit", 0, 1))[0]]
    return drawn + FREE


def test_identify_means_are_every_family_mean_at_end(model, means):
    """Protects the knockout's means: identify_end_means equals the plain average of END head outputs over
    identify's reference-pool X_c (every family), computed here from the pool's prompts directly."""
    net, tok = model
    pool = pool_prompts(tok, live_explorer.identify_templates(PARAMS), PARAMS["pool_size"], PARAMS["seed"],
                        draw=pairs.Draw(PARAMS["answer_token"], 0, 1))
    xc = [s.corrupt for ss in pool.values() for s in ss]
    ref = torch.stack([z[:, -1] for _, z, _ in activations(net, tok, xc)]).mean(0)
    assert len(xc) == 5 * PARAMS["pool_size"]
    assert float((means - ref).abs().max()) < 1e-5


def test_page_matches_pytorch(model, means, page):
    """Protects the page's numbers: on >= 20 prompts (10 never precomputed) its token ids equal the tokenizer's
    and its logits, head effects, knockout logits, attention rows and MLP number tokens (Fig. 6c) are within 1e-4
    of PyTorch's."""
    net, tok = model
    b, _ = page
    H, L = net.config.num_attention_heads, net.config.num_hidden_layers
    worst = {"logits": 0.0, "effects": 0.0, "knockout": 0.0, "attention": 0.0, "mlp cosines": 0.0}
    ms, cases = [], prompts(tok)
    assert len(cases) >= 20
    for text, cf_typed in cases:
        r = b.driver.execute_script("return window.arithmechLive.analyze(arguments[0], arguments[1])", text, cf_typed)
        ms.append(r["ms"])
        ids = tok(text)["input_ids"]
        assert r["ids"] == ids, text
        cf = r["counterfactual"]
        assert cf_typed in ("", cf) and len(tok(cf)["input_ids"]) == len(ids), (text, cf)
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = net(x).logits[0, -1].double()
            answer = torch.tensor([int(logits.argmax())])
            assert r["answer"] == int(answer)
            clean, corrupt = end_cache(net, tok, [text], answer), end_cache(net, tok, [cf], answer)
            eff = path_patch_reference(net, tok, Inputs([text], clean, corrupt, answer)).relative_change(warn=False)[0, :, :H]
            with mean_ablation(net, KEY, PoolMean(means))():
                ko = net(x).logits[0, -1].double()
            att = end_rows(net, x, range(L))
        worst["logits"] = max(worst["logits"], float((torch.tensor(r["logits"]) - logits).abs().max()))
        worst["effects"] = max(worst["effects"], float((torch.tensor(r["effects"]) - eff.double()).abs().max()))
        worst["knockout"] = max(worst["knockout"], float((torch.tensor(r["knockoutLogits"]) - ko).abs().max()))
        worst["attention"] = max(worst["attention"], float(
            (torch.tensor(r["attention"]) - torch.stack([att[l][0] for l in range(L)]).double()).abs().max()))
        nums = layer_top_numbers(net, tok, text, k=3)
        for l, shown in enumerate(r["numbers"]):
            ref = nums[nums.layer == l]
            assert [t for t, _ in shown] == list(ref.token), (text, l)
            worst["mlp cosines"] = max(worst["mlp cosines"], max(abs(c - float(x)) for (_, c), x in zip(shown, ref.cosine)))
    print(f"\nlive explorer vs PyTorch on {len(cases)} prompts: max |diff| " +
          ", ".join(f"{k} {v:.2e}" for k, v in worst.items()) + f"; median {statistics.median(ms):.0f} ms, "
          f"max {max(ms):.0f} ms per prompt")
    assert max(worst.values()) <= TOL, worst
    assert statistics.median(ms) < 1000, ms


def _type(b, prompt: str, cf: str = "", paste: bool = False) -> dict:
    """Type (or, ``paste``, set at once) the prompt and counterfactual, press run, and return what the page shows."""
    from selenium.webdriver.common.by import By
    d = b.driver
    for cls, text in (("arithmech-live-prompt", prompt), ("arithmech-live-counterfactual", cf)):
        box = d.find_element(By.CLASS_NAME, cls)
        box.clear()
        if paste:
            d.execute_script("arguments[0].value = arguments[1];", box, text)
        else:
            box.send_keys(text)
    d.find_element(By.CLASS_NAME, "arithmech-live-run").click()
    return d.execute_script("""const b = document.getElementById('arithmech-live');
      return {status: b.querySelector('.arithmech-live-status').textContent, imgs: b.querySelectorAll('img').length,
              scripts: b.querySelectorAll('script').length, shown: (b.querySelector('.arithmech-live-shown') || {}).textContent,
              top: Array.from(b.querySelectorAll('.arithmech-live-top td')).map(t => t.textContent),
              pwned: window.pwned === 1};""")


def test_hostile_and_impossible_input(model, page):
    """Protects the reader's input path: markup is text (nothing runs, no element is made), an unknown word,
    an over-long prompt and a prompt without operator each get one sentence, and the page then still answers
    (and shows the attention of a clicked head)."""
    net, tok = model
    b, _ = page
    for hostile in ('<img src=x onerror="window.pwned=1">', '4 + 3 = </script><script>window.pwned=1</script>'):
        s = _type(b, hostile)
        assert not s["pwned"] and s["imgs"] == 0 and s["scripts"] == 0, s
        assert s["status"].count(".") >= 1 and "cannot be scored" in s["status"], s
    s = _type(b, "4 + 3 > 5 < =")                # markup characters the model knows: scored, shown as text
    assert s["shown"] == "4 + 3 > 5 < =" and s["imgs"] == 0, s
    assert "no token for" in _type(b, "4 + 3 = banana")["status"]
    assert "at most 64" in _type(b, "1 + 1 = " * 20)["status"]
    assert "at most 64" in _type(b, "1" * 3000, paste=True)["status"]              # refused before it is tokenized
    assert "no counterfactual" in _type(b, "4 and 3 is")["status"]
    assert "same length" in _type(b, "4 + 3 =", "4 nothing at all 3 =")["status"]
    s = _type(b, "6 + 2 =")
    top1 = tok.convert_ids_to_tokens([int(net(torch.tensor([tok("6 + 2 =")["input_ids"]])).logits[0, -1].argmax())])[0]
    assert s["shown"] == "6 + 2 =" and s["top"][1].startswith(top1 + "  "), s
    from selenium.webdriver.common.by import By
    b.driver.find_element(By.CSS_SELECTOR, '.arithmech-live-cell[data-head="2.5"]').click()   # a head's attention
    att = b.driver.execute_script("""const a = document.querySelector('.arithmech-live-attention');
      return [a.querySelector('strong').textContent, a.querySelectorAll('.arithmech-live-bars > div').length];""")
    assert att == ["Attention of head 2.5 from the last token", len(tok("6 + 2 =")["input_ids"])], att
    errors = [e for e in b.driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_page_weight(page):
    """Protects the page's weight: the three live-explorer files together stay within 20 MB."""
    _, path = page
    files = [path.parent.parent / "_static" / live_explorer.LIVE_DIR / n for n in (live_explorer.MODEL_JS, *live_explorer.SOURCES)]
    total = sum(f.stat().st_size for f in files)
    print(f"\nlive explorer assets: {total} bytes")
    assert total <= 20_000_000
