"""Mean ablation (paper §4.1, Fig. 3, Fig. 4, Table 4): knock components out and measure what the model loses.

A knocked-out head or MLP stops writing what it computed on the prompt: its output is replaced by its mean over
counterfactual prompts ``X_c``. The modules, in the order a knockout runs through them::

    settings ──► intervention ──► knockout ──► pool ──► pool_cache ──► curves ──► run ──► tables
    (checked      (the one         (ablated      (reference  (computed    (top k vs   (identify's  (the book's
     before a      replacement,     forwards,     pool's      once,        random,     knockout     tables)
     model loads)  MeanSource)      own-X_c)      means)      reused)      Wilson)     phase)
                                        └──► overlap (Table 4)   └──► transfer (Fig. 4, a held-out family)

* :mod:`~arithmech.methods.ablation.settings`: how identify's knockout runs (:class:`KnockoutSettings`), what one
  curve knocks out (:class:`Curve`), which prompts it draws (:class:`Prompts`); no torch import, so a step config
  builds and checks them before any model loads.
* :mod:`~arithmech.methods.ablation.intervention`: the one intervention, :class:`MeanAblation` (a site's value with
  the masked components replaced by their means), the :class:`MeanSource` protocol every store of means answers,
  and :class:`Forwards` (how a knockout batches its forwards and where it ablates: END or every position).
* :mod:`~arithmech.methods.ablation.knockout`: the ablated forwards: what to knock out (:class:`Ablation`), many
  ablations per batched forward on the clean prefix's key/value cache (``knockout_topk``, ``ablated_logits``),
  top-1 accuracy at END; and the means over the evaluated prompts' own ``X_c`` (``Means``, ``mean_activations``,
  position-pooled for free text).
* :mod:`~arithmech.methods.ablation.pool`: the means identify uses: a reference pool of ``X_c`` the evaluated
  prompts never see, a prompt's own operand pair left out (``PoolMeans``, ``pool_prompts``, ``build_pool``).
* :mod:`~arithmech.methods.ablation.pool_cache`: the pool's means computed once and reused, keyed by content.
* :mod:`~arithmech.methods.ablation.curves`: Fig. 3's curves: accuracy as the top ``k`` components are knocked out
  against seeded random orders of the non-key ones, every accuracy with its Wilson interval.
* :mod:`~arithmech.methods.ablation.run`: identify's knockout phase per task: held-out prompts, the pool, the curves
  and the sanity rows (nothing out, all heads out, the floors), the rows of ``knockout.csv``.
* :mod:`~arithmech.methods.ablation.tables`: ``knockout.csv`` as the book's tables (key heads vs as many random
  ones, END vs every position, the sanity table: does the ablation remove anything?).
* :mod:`~arithmech.methods.ablation.overlap`: the shared heads of two identify runs and their knockout (Table 4).
* :mod:`~arithmech.methods.ablation.transfer`: the knockout on Fig. 4's free-text prompts and on a template family
  the heads were not found on (identify's transfer phase).

Other methods use the intervention as a tool and stay beside their own measure: the prompt explorer
(:mod:`arithmech.methods.explorer`) and faithfulness (:mod:`arithmech.methods.faithfulness`) ablate with
:class:`MeanAblation` and the pool's folds.
"""
