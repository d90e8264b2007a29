"""D2's float64 twin, from README.md here (Tang et al., ICML 2018): NIDS's round with W~ = W,
x^1 = W (x^0 - d^0);  x^{k+1} = W (2 x^k - x^{k-1} - d^k + d^{k-1}), run by NIDS's twin
(optimizers/nids/twin.py) with c = 1."""
from twin import load_twin


def run(c):
    load_twin("nids").run(c, cc=1.0)
