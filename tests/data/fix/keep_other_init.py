import os

import torch

x = torch.ones(1).cuda()
if torch.cuda.is_available():
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["GPU"]
