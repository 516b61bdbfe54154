import os
import sys

import torch

torch.cuda.init()
os.environ["CUDA_VISIBLE_DEVICES"] = sys.argv[1]
