"""Table 1: precise SFT of the key heads against full SFT and random heads, explored over whole learning-rate grids
and confirmed on fresh seeds.

The modules by role:

* **run** — :mod:`~arithmech.table1.finetune` (one arm, ``python -m arithmech finetune``, and its checks),
  :mod:`~arithmech.table1.run` (the step, ``python -m arithmech table1``) and its :mod:`~arithmech.table1.runner`
  (the plan as fields), :mod:`~arithmech.table1.train` (one arm at one rate, and full SFT's learning curve: the step
  budget), :mod:`~arithmech.table1.plan` (the grids, bracketing, frontier rates, the confirmation's rate rules, and
  which heads each precise arm tunes);
* **result** — :mod:`~arithmech.table1.result` (:class:`~arithmech.table1.result.Table1Result`, the one reader of an
  arms run's files);
* **rules** — :mod:`~arithmech.table1.verdicts` (per-record scores, the collapse gate, the single-rate readings),
  :mod:`~arithmech.table1.frontier` (runs grouped into grid points; the rules' parts), :mod:`~arithmech.table1.curves`
  (the rules over whole grids), :mod:`~arithmech.table1.design` (what the design detects; the verdicts without one
  seed's draws), :mod:`~arithmech.table1.claims` (the five claims and their deciders);
* **pages** — :mod:`~arithmech.table1.page` (the Fine-tune chapter), :mod:`~arithmech.table1.real_llm_page` (the
  SmolLM2 appendix's section), :mod:`~arithmech.table1.views` and :mod:`~arithmech.table1.curve_views` (tables and
  lines), :mod:`~arithmech.table1.charts`;
* **confirmation** — the exploration's leads, confirmed: :mod:`~arithmech.table1.protocol` (arms, rates, contrasts,
  margins and fresh seeds, written and committed before any confirmatory run), :mod:`~arithmech.table1.confirm` (the
  runner, ``python -m arithmech confirm``), :mod:`~arithmech.table1.contrasts` (the paired interval and its
  readings) and :mod:`~arithmech.table1.confirmation` (:class:`~arithmech.table1.confirmation.Confirmation`: the
  records read once, every contrast decided, and its page parts).
"""
