"""The lab: experiment grids and their results store, reports and plots, frozen probes and the
inference benchmark, for comparing strategies with numbers that can be trusted."""
