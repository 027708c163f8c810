"""bertlens: measure which representation of a BERT-family encoder fits a task, then serve it fast."""

from bertlens.embedder import Embedder
from bertlens.encoding.encoder import Encoder, LayerStates
from bertlens.errors import BertlensError
from bertlens.models import ModelRef, resolve_model
from bertlens.representation.mixers import ScalarMix
from bertlens.representation.recipe import Recipe

__version__ = "0.1.0"

__all__ = ["BertlensError", "Embedder", "Encoder", "LayerStates", "ModelRef", "Recipe", "ScalarMix", "resolve_model"]
