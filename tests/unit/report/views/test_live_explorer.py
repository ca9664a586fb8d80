"""The live explorer's Python half (arithmech.report.views.live_explorer): the weights the page decodes are the model's,
the page's HTML cannot be closed by its data, identify's templates are identify's. The browser half:
tests/book/test_live_explorer.py."""
from __future__ import annotations

import base64
import json

import numpy as np
from safetensors import safe_open

from arithmech.core.names import EMBEDDED_DIR
from arithmech.data import pairs
from arithmech.report.views import live_explorer


def test_payload_holds_the_safetensors_weights_exactly():
    """Protects the page's weights: every tensor decoded from the payload (base64, float16, offsets) equals the
    safetensors file's, bit for bit, and the vocabulary and config are the tokenizer's and config.json's."""
    p = live_explorer.model_payload()
    half = np.frombuffer(base64.b64decode(p["data"]), dtype="<f2")
    with safe_open(EMBEDDED_DIR / "model.safetensors", "np") as f:
        assert sorted(f.keys()) == sorted(p["tensors"])
        for name, (offset, shape) in p["tensors"].items():
            size = int(np.prod(shape))
            assert np.array_equal(half[offset:offset + size].reshape(shape), f.get_tensor(name)), name
    cfg = json.loads((EMBEDDED_DIR / "config.json").read_text())
    assert len(p["tokens"]) == cfg["vocab_size"] and p["config"]["num_hidden_layers"] == cfg["num_hidden_layers"]
    assert [t for _, t in p["numbers"]] == [str(d) for d in range(10)]


def test_page_html_cannot_be_closed_by_its_data():
    """Protects the page against its own data: a ``</script>`` inside the JSON is escaped, so the data script
    ends where it should, and the JSON still reads back as given."""
    data = {"keyHeads": [[0, 0]], "keyLabel": "</script><img src=x onerror=alert(1)>", "means": [[0.5]], "prompt": "4 + 3 ="}
    html = live_explorer.page_html(data)
    body = html.split('id="arithmech-live-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(body) == data


def test_identify_templates_follow_the_recorded_tasks():
    """Protects the means' source: the pool's templates are each recorded task's, then the held-out family's when
    identify ran the transfer test (its order), and the held-out family only then."""
    params = {"tasks": ["addition", "division"], "heldout": "fig10", "transfer": True}
    ids = [t.id for t in live_explorer.identify_templates(params)]
    expected = [t.id for t in pairs.select_templates("addition") + pairs.select_templates("division")
                + pairs.select_templates("fig10")]
    assert ids == expected
    assert len(live_explorer.identify_templates({**params, "transfer": False})) == len(expected) - len(pairs.select_templates("fig10"))
