"""Memory-budget planner: kernel choice, slicing, weight preloading and a static arena plan
over time x address (FlexNN's slicing-loading-computing joint planning). Pure Python."""
from __future__ import annotations

from .arena import min_budget, plan, simulate
from .graph import ALIGN, MB, Graph, GraphError, KernelOption, Layer, Tensor
from .result import Block, BudgetTooSmall, LayerPlan, Plan, Slot

__all__ = ["plan", "min_budget", "simulate", "Graph", "GraphError", "Tensor",
           "KernelOption", "Layer", "Plan", "LayerPlan", "Slot", "Block", "BudgetTooSmall",
           "MB", "ALIGN"]

