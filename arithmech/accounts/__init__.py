"""Three accounts, one testbed: where arithmetic happens, and what the MLPs compute.

One wing, self-contained: the account rules (:mod:`~arithmech.accounts.rules`, written and committed before any
run that decides them), the step's config (:mod:`~arithmech.accounts.config`), its computations (the operand
grid and neuron attribution, :mod:`~arithmech.accounts.grid`; heuristic classes and periodic fits,
:mod:`~arithmech.accounts.classify`; the Fourier tests, :mod:`~arithmech.accounts.fourier`; ablations,
:mod:`~arithmech.accounts.ablate`; the counterfactuals, :mod:`~arithmech.accounts.counterfactual`), the step
itself (:mod:`~arithmech.accounts.run`: ``python -m arithmech accounts``), the signature table
(:mod:`~arithmech.accounts.signatures`) and the chapter's page and charts (:mod:`~arithmech.accounts.page`,
:mod:`~arithmech.accounts.charts`).

The accounts: (H) heads move operands, MLPs compute (Zhang et al. 2024; Stolfo et al. 2023); (B) a bag of
heuristic neurons (Nikankin et al. 2025); (F) Fourier features (Zhou et al. 2024, with the control of Fu et al.
2026); (D) a helix (Kantamneni & Tegmark 2025). The wing scores signatures, not a winner.
"""
