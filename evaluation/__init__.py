"""Research and benchmark helpers, outside the product engine: cost model, HumanEvalPack corpus,
metrics and the baseline edit formats. The engine never imports this package."""
