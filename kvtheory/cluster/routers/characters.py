"""Prompt characters modelled from tokens, for the routers that measure prompts in characters.

The reference routers (SGLang's cache-aware router and the authors' LBGR) see the prompt text, never
its tokens, and count characters: match lengths, tree sizes, LBGR's cost of 1 ms per uncached
character. kvtheory's workloads are token ids, so a prefix of k tokens is modelled as
``chars_per_token * k`` characters. The default 4.0 is the usual figure for English text under a
GPT-style BPE vocabulary such as Llama 3's (about 4 characters, or 0.75 words, per token). It is a
model, not a measurement of any workload here: the GSP prompts of the reference are uniformly random
vocabulary tokens decoded to text, whose mean length per token is not known to kvtheory (no tokenizer
is shipped); set the option to the figure of the text being modelled.

A constant ratio leaves every ratio of character counts equal to the ratio of token counts (match
rates, which tree is smallest); what it changes is how characters weigh against quantities in other
units: LBGR's learned residual and its 1 ms floor and margin, and the trees' 2^24-character limit.
"""

from __future__ import annotations

import math

from kvtheory.errors import InputError

CHARS_PER_TOKEN = 4.0
#: SGLang's router default ``max_tree_size``: each worker's tree is trimmed to this many characters
MAX_TREE_CHARS = 2**24
#: ... every this many seconds (``eviction_interval_secs``)
TRIM_INTERVAL = 60.0


def check_tree_options(router: str, chars_per_token: float, max_tree_chars: int, trim_interval: float) -> int:
    """Check the options shared by the character-measuring routers; return the tree limit in tokens."""
    if not (math.isfinite(chars_per_token) and chars_per_token > 0):
        raise InputError(f"{router}: chars_per_token must be a positive number, got {chars_per_token}")
    if max_tree_chars < 1:
        raise InputError(f"{router}: max_tree_chars must be a positive number of characters, got {max_tree_chars}")
    if not trim_interval > 0:
        raise InputError(f"{router}: trim_interval must be a positive number of seconds, got {trim_interval}")
    return math.floor(max_tree_chars / chars_per_token)
