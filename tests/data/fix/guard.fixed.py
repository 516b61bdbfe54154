import os
import sys

import torch.cuda as tc

if not (tc.device_count() > 0):  # no GPU: nothing to choose
    sys.exit("no GPU")
os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("GPU", "0")
