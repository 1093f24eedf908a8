"""GRPO on CompanyOS with TRL: a rollout function that plays whole episodes through the sync
client and returns each episode's return as its reward.

    pip install -e '.[train]'          # TRL and PyTorch (torch==2.13.0)
    companyos serve &                  # or any CompanyOS server: --url
    python examples/train_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --difficulty 0 --steps 200
    python examples/train_grpo.py --tiny --steps 1    # a tiny random model, on the CPU, no download

How it fits TRL's `GRPOTrainer(rollout_func=...)`:
- The dataset's prompts are instance ids of the train suite (``purchase_order-d0-s17``); TRL
  repeats each ``num_generations`` times, and those episodes of one instance form a group.
- For each prompt the rollout resets that instance over a `/ws` session and plays it turn by
  turn: the chat template renders the conversation with the app tools (the same catalogue as
  MCP), the model generates, the first ``<tool_call>`` block of its text is the action (junk is
  a logged invalid action, as for the LLM agent), and the result goes back as a tool message.
- ``completion_ids`` is every turn's generated tokens followed by the environment's answer;
  ``env_mask`` marks the model's own tokens (1) against the environment's (0), so only what the
  model wrote is trained. The reward is the episode's return, read from the environment: the
  event log holds every training episode, labelled ``grpo``, for the analytics and the viewer.

``--tiny`` builds a randomly initialised Llama with a few thousand parameters and a word-level
tokenizer trained here on CompanyOS text, so that the whole loop runs on a CPU in seconds
(`tests/test_train_grpo.py` runs it). Its vocabulary holds a few whole tool calls as single
words, so that even a random model sometimes makes a valid call and rewards differ.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerBase
from trl import GRPOConfig, GRPOTrainer

from companyos.agents.toolcalls import (
    SYSTEM_PROMPT,
    function_tools,
    parse_text_tool_call,
    result_message,
    task_message,
)
from companyos.api.client import CompanyOSClient
from companyos.domain import SUITES, instance_id, parse_instance_id

TOOLS = function_tools()


# ---------------------------------------------------------------------- one episode


class EpisodePlayer:
    """Plays instances with a causal LM over one client session and keeps what it played."""

    def __init__(
        self,
        url: str,
        max_new_tokens: int,
        temperature: float,
        max_steps: int | None,
        label: str = "grpo",
    ) -> None:
        self.env = CompanyOSClient(url, message_timeout_s=300).sync()
        self.env.connect()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_steps = max_steps
        self.label = label
        self.played: list[dict[str, Any]] = []

    def close(self) -> None:
        self.env.close()

    def play(self, model: Any, tok: PreTrainedTokenizerBase, prompt: str) -> dict[str, Any]:
        parsed = parse_instance_id(prompt.strip())
        if parsed is None:
            raise ValueError(
                f"prompts must be instance ids such as expense_report-d0-s3: {prompt!r}"
            )
        family, difficulty, seed = parsed
        options: dict[str, Any] = {"seed": seed, "task_id": family, "difficulty": difficulty}
        if self.max_steps is not None:
            options["max_steps"] = self.max_steps
        obs = self.env.reset(agent=self.label, **options).observation
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_message(obs)},
        ]
        prompt_ids = render_ids(tok, render(tok, messages, generation=True))
        ids, completion, mask = list(prompt_ids), [], []
        total = 0.0
        while not obs.done:
            generated = self.generate(model, tok, ids)
            text = tok.decode(generated, skip_special_tokens=True)
            action, note = parse_text_tool_call(text)
            result = self.env.step(action)
            obs = result.observation
            total += result.reward or 0.0  # the trainer's channel; the model never sees it
            completion += generated
            mask += [1] * len(generated)
            ids += generated
            if obs.done:
                break
            # The environment's answer, as the chat template renders it after the reply.
            answer = {"role": "tool", "content": result_message(obs, note)}
            if action["app"] == "llm":  # no usable call: not a tool's answer
                answer["role"] = "user"
            feedback = answer_ids(tok, messages, text, answer, ends=generated[-1:])
            messages += [{"role": "assistant", "content": text}, answer]
            completion += feedback
            mask += [0] * len(feedback)
            ids += feedback
        episode = {
            "episode_id": obs.episode_id,
            "instance": instance_id(family, difficulty, seed),
            "return": round(total, 6),
            "outcome": obs.outcome,
            "steps": obs.step,
            "model_tokens": sum(mask),
        }
        self.played.append(episode)
        return {"prompt_ids": prompt_ids, "completion_ids": completion, "env_mask": mask, **episode}

    @torch.no_grad()
    def generate(self, model: Any, tok: PreTrainedTokenizerBase, ids: list[int]) -> list[int]:
        inputs = torch.tensor([ids], device=model.device)
        out = model.generate(
            inputs,
            attention_mask=torch.ones_like(inputs),
            max_new_tokens=self.max_new_tokens,
            do_sample=True,
            temperature=self.temperature,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )[0, len(ids) :].tolist()
        if tok.eos_token_id in out:  # the reply ends at its end-of-turn token
            out = out[: out.index(tok.eos_token_id) + 1]
        return out or [tok.eos_token_id]


def render(tok: PreTrainedTokenizerBase, messages: list[dict[str, Any]], generation: bool) -> str:
    text = tok.apply_chat_template(
        messages, tools=TOOLS, tokenize=False, add_generation_prompt=generation
    )
    return str(text)


def render_ids(tok: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def answer_ids(
    tok: PreTrainedTokenizerBase,
    messages: list[dict[str, Any]],
    reply: str,
    answer: dict[str, Any],
    ends: list[int],
) -> list[int]:
    """The tokens that follow the model's reply: what the chat template adds for the answer
    and the next generation prompt (the rendering of the longer conversation minus that of
    the shorter). An end-of-turn token first if the reply was cut before its own."""
    before = render(tok, [*messages, {"role": "assistant", "content": reply}], generation=False)
    after = render(tok, [*messages, {"role": "assistant", "content": reply}, answer], True)
    delta = after[len(before) :] if after.startswith(before) else "\n" + answer["content"] + "\n"
    closing = [] if ends == [tok.eos_token_id] else [tok.eos_token_id]
    return closing + render_ids(tok, delta)


def make_rollout(player: EpisodePlayer) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """TRL's rollout_func: one episode per prompt (TRL has already repeated each prompt
    num_generations times)."""

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        tok = trainer.processing_class
        keys = ("prompt_ids", "completion_ids", "env_mask", "return", "episode_id")
        out: dict[str, list[Any]] = {k: [] for k in keys}
        for prompt in prompts:
            episode = player.play(model, tok, prompt if isinstance(prompt, str) else str(prompt))
            for k in keys:
                out[k].append(episode[k])
        return {
            "prompt_ids": out["prompt_ids"],
            "completion_ids": out["completion_ids"],
            "logprobs": None,  # TRL computes them: generation here is by the policy itself
            "env_mask": out["env_mask"],
            "env_return": out["return"],
            "episode_id": out["episode_id"],
        }

    return rollout


def episode_return(completions: list[Any], env_return: list[float], **_: Any) -> list[float]:
    """The reward of a completion: the return of the episode it played (from the log)."""
    return [float(r) for r in env_return]


# ---------------------------------------------------------------------- a tiny model


CHAT_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{%- if loop.first and tools %} tools: {% for t in tools %}"
    "{{ t['function']['name'] }} {% endfor %}\n{%- endif %}"
    "{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_corpus() -> list[str]:
    """Text to build the tiny tokenizer's vocabulary from: the prompts, task texts, and whole
    tool calls written without spaces (a word-level tokenizer keeps each as one token)."""
    from companyos.api import CompanyOSEnvironment

    env = CompanyOSEnvironment()
    texts = [SYSTEM_PROMPT]
    for family, difficulty, seed in SUITES["train"].instances((0,), per_cell=2):
        texts.append(task_message(env.reset(seed=seed, task_id=family, difficulty=difficulty)))
    calls = [
        {"name": t["function"]["name"], "arguments": {}}
        for t in TOOLS
        if not t["function"]["parameters"].get("required")
    ]
    texts += ["<tool_call>" + json.dumps(c, separators=(",", ":")) + "</tool_call>" for c in calls]
    return texts


def tiny_model_and_tokenizer(seed: int = 0) -> tuple[Any, Any]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator(tiny_corpus(), trainers.WordLevelTrainer(special_tokens=specials))
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
        padding_side="left",
    )
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config), tok


# ---------------------------------------------------------------------- training


def dataset(args: argparse.Namespace) -> Dataset:
    difficulties = tuple(args.difficulty or (0,))
    families = tuple(args.family) if args.family else None
    ids = [
        instance_id(f, d, s)
        for f, d, s in SUITES["train"].instances(difficulties, families, args.per_cell)
    ]
    return Dataset.from_dict({"prompt": ids})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="a CompanyOS server")
    p.add_argument("--model", default=None, help="a causal LM (hub id or path) with tool calling")
    p.add_argument("--tiny", action="store_true", help="a tiny random model built here (CPU)")
    p.add_argument("--family", action="append", help="train-suite families (default: all)")
    p.add_argument("--difficulty", action="append", type=int, help="levels (default: 0)")
    p.add_argument("--per-cell", type=int, default=4, help="instances per family and level")
    p.add_argument("--steps", type=int, default=100, help="optimisation steps")
    p.add_argument("--batch", type=int, default=8, help="episodes per step")
    p.add_argument("--generations", type=int, default=4, help="episodes per instance (a group)")
    p.add_argument("--episode-steps", type=int, default=None, help="cap every step budget")
    p.add_argument("--max-new-tokens", type=int, default=256, help="per turn")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", default="data/grpo")
    p.add_argument("--report", type=Path, default=None, help="write episodes and logs as JSON")
    args = p.parse_args(argv)
    if args.tiny == (args.model is not None):
        p.error("give --model NAME or --tiny")

    if args.tiny:
        model, tok = tiny_model_and_tokenizer(args.seed)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tok = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    before = [w.detach().clone() for w in model.parameters()]
    player = EpisodePlayer(args.url, args.max_new_tokens, args.temperature, args.episode_steps)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        learning_rate=args.lr,
        max_completion_length=1_000_000,  # episodes are bounded by their step budget instead
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        seed=args.seed,
        disable_tqdm=True,
        gradient_checkpointing=not args.tiny,  # memory for real models; the tiny one needs none
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=episode_return,
        args=config,
        train_dataset=dataset(args),
        processing_class=tok,
        rollout_func=make_rollout(player),
    )
    try:
        trainer.train()
    finally:
        player.close()
    moved = zip(model.parameters(), before, strict=True)
    changed = sum(float((w.detach() - b).abs().sum()) for w, b in moved)
    returns = [e["return"] for e in player.played]
    print(
        f"{trainer.state.global_step} step(s), {len(returns)} episodes, mean return "
        f"{statistics.mean(returns):+.2f}, parameters moved {changed:.4g}"
    )
    if not args.tiny:
        trainer.save_model()
    if args.report:
        args.report.write_text(
            json.dumps(
                {
                    "global_step": trainer.state.global_step,
                    "episodes": player.played,
                    "log_history": trainer.state.log_history,
                    "parameter_change": changed,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
