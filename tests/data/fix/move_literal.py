#!/usr/bin/env python
"""Train a model."""
from __future__ import annotations

import os
import sys

import torch  # the model

use_cuda = torch.cuda.is_available()
# pick the second GPU
os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # the spare one
print(use_cuda, sys.argv)
