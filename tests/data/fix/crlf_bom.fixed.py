"""Doc."""
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "é"

import torch
torch.cuda.init()
