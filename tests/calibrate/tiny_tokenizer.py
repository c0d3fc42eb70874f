"""A small byte-level BPE tokenizer and a Qwen3-32B-shaped config.json, made here from a text that
ships with AIPerf: Dynamo's frontend and AIPerf both need a tokenizer, and none can be downloaded
in a test. Run with the AIPerf venv's python (it has `tokenizers` and `transformers`):

    python tiny_tokenizer.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aiperf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def main(out: Path) -> None:
    corpus = Path(aiperf.__file__).parent / "dataset" / "generator" / "assets" / "shakespeare.txt"
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4096, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train([str(corpus)], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    eos = tokenizer.token_to_id("<|im_end|>")
    config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": tokenizer.get_vocab_size(),
              "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
              "head_dim": 128, "intermediate_size": 25600, "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
              "eos_token_id": eos, "tie_word_embeddings": False}
    (out / "config.json").write_text(json.dumps(config, indent=1))
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
