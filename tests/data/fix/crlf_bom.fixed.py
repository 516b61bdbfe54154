"""Doc."""
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # the café GPU

import torch
torch.cuda.init()
