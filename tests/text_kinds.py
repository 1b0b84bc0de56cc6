"""A corpus of text kinds for calibrating and checking the approximate token estimate.

Each kind is a list of texts, built deterministically from the repository's own files, the
recorded transcripts (when present), generated ids, and hand-written multilingual
passages. The estimate's test and ``benchmarks/estimate_bench.py`` both use it.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from pathlib import Path

from tests.helpers import load_transcript, transcript_files

__all__ = ["KINDS", "text_kinds"]

ROOT = Path(__file__).resolve().parents[1]

KINDS = (
    "prose",
    "code",
    "json",
    "paths",
    "hex ids",
    "short chat turns",
    "chinese",
    "cjk+emoji+rtl",
    "transcripts",
)
"""The kinds, in report order."""

_CHINESE = [
    "我们需要把这个函数拆成两个部分：第一部分负责读取配置文件，第二部分负责验证每一个字段。"
    "如果某个字段缺失，程序应该给出明确的错误信息，告诉用户缺少的是哪一个字段以及如何修复。",
    "昨天的测试在持续集成服务器上失败了三次，原因是数据库连接在高并发时被耗尽。"
    "我建议把连接池的大小从十增加到二十，并且在每次请求结束后及时释放连接。",
    "请帮我检查一下这个模块的性能问题。用户反馈说页面加载需要五秒钟以上，"
    "尤其是在数据量很大的时候。我怀疑是查询没有使用索引，导致全表扫描。",
    "这份报告总结了过去一个季度的工作进展：完成了用户认证系统的重构，修复了四十二个缺陷，"
    "并且把平均响应时间降低了百分之三十。下一步的重点是提高测试覆盖率和完善文档。",
    "模型的上下文窗口是有限的，所以长时间运行的智能体必须决定每一轮向模型展示哪些内容。"
    "较早的对话可以被压缩成一条记忆笔记，而最近的消息则保持原样发送。",
    "在分布式系统中，时钟同步是一个经典难题。不同机器上的时间可能相差几毫秒甚至几秒，"
    "因此我们通常使用逻辑时钟或者向量时钟来确定事件发生的先后顺序。",
    "你好！请问明天下午三点的会议还按原计划进行吗？如果需要改时间，请提前告诉我。",
    "函数返回值为空的时候，调用方没有做判断，直接访问了它的属性，于是抛出了异常。"
    "修复方法很简单：在访问之前先检查返回值是否为空，或者让函数在失败时抛出更清楚的错误。",
]

_MIXED = [
    "今日は本当にいい天気ですね☀️ 公園で散歩しましょう🌸 그리고 저녁에는 같이 밥 먹어요 🍜🍣",
    "مرحبا بكم في المشروع الجديد! نحن نعمل على تحسين أداء النظام 🚀 "
    "שלום לכולם, הפגישה נדחתה למחר בבוקר 📅 "
    "请在周五之前提交代码审查 ✅👍",
    "🎉🎉 恭喜发布新版本！ 🎊 릴리스 노트를 확인하세요 📝 "
    "تم إصلاح جميع الأخطاء المعروفة 🐛➡️✨ הגרסה החדשה זמינה להורדה ⬇️",
    "ユーザー登録の画面でエラーが出ています😢 "
    "ログを見ると、データベースへの接続がタイムアウトしています⏱️ "
    "사용자 등록 화면에서 오류가 발생합니다 🔥 확인 부탁드립니다 🙏",
    "👨‍👩‍👧‍👦 家族の写真 📸 가족 사진 🏠 صورة العائلة ❤️ תמונה משפחתית 💕 家庭照片 🥰😍🤩",
    "السلام عليكم، هل يمكنك مراجعة طلب الدمج الخاص بي؟ لقد أضفت اختبارات جديدة للوحدة "
    "وأصلحت مشكلة في معالجة التواريخ. شكرا جزيلا 🙂 "
    "אני חושב שצריך לשנות את שם הפונקציה כדי שיהיה ברור יותר מה היא עושה 🤔",
    "🇯🇵🇰🇷🇨🇳🇸🇦🇮🇱 국제화 테스트: 日本語、한국어、中文、العربية、עברית 🌍🌏🌎 "
    "模型上下文 🧠 コンテキスト 🧩 컨텍스트 📚",
]

_SHORT = [
    "ok",
    "thanks!",
    "yes, go ahead",
    "no, stop",
    "hi there :)",
    "Can you check?",
    "done.",
    "LGTM 👍",
    "why?",
    "sure, 2pm works",
    "k",
    "what's the status on #1423?",
    "nvm, fixed it",
    "ty!!",
    "run the tests again pls",
    "?",
    "see PR #88 & #91",
    "ETA?",
    "ack",
    "+1",
]


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size) if text[i : i + size].strip()]


def _repo_files(pattern: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob(pattern)))


def _prose() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = _repo_files("docs/*.md")
    paragraphs = [
        p.replace("\n", " ")
        for p in (readme + "\n\n" + docs).split("\n\n")
        if len(p) > 200 and not p.lstrip().startswith(("|", "```", "#", "*", "-", "<"))
    ]
    return paragraphs[:80]


def _code() -> list[str]:
    return _chunks(_repo_files("langchain_builderforce_memory/**/*.py"), 2_000)[:80]


def _json() -> list[str]:
    rng = random.Random(7)
    out: list[str] = []
    for i in range(60):
        record = {
            "id": f"call_{i}",
            "name": rng.choice(["read_file", "run_tests", "search", "edit_file"]),
            "args": {
                "path": f"src/pkg_{i % 7}/module_{i}.py",
                "line": rng.randint(1, 4000),
                "limit": rng.randint(10, 500),
                "query": rng.choice(["def main", "TODO", "class Config", "import os"]),
                "flags": [rng.random() > 0.5 for _ in range(3)],
                "score": round(rng.random(), 4),
            },
            "status": rng.choice(["ok", "error", None]),
        }
        out.append(json.dumps(record, indent=rng.choice([None, 2])))
    return out


def _paths() -> list[str]:
    files = sorted(str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py"))
    deep = [
        f"/home/runner/work/{p}" if i % 2 else f"./.venv/lib/python3.11/site-packages/{p}"
        for i, p in enumerate(files)
    ]
    return ["\n".join(deep[i : i + 12]) for i in range(0, len(deep), 12)]


def _hex_ids() -> list[str]:
    out: list[str] = []
    for i in range(60):
        seed = str(i).encode()
        sha = hashlib.sha256(seed).hexdigest()
        u = uuid.UUID(bytes=hashlib.md5(seed, usedforsecurity=False).digest())
        if i % 3 == 0:
            out.append(
                " ".join(
                    hashlib.sha1(seed + bytes([j]), usedforsecurity=False).hexdigest()
                    for j in range(8)
                )
            )
        elif i % 3 == 1:
            out.append(f"{sha}\n{u}\n{sha[:12]}")
        else:
            out.append(
                ",".join(
                    str(uuid.UUID(int=int(sha, 16) >> (4 * j) & (2**128 - 1))) for j in range(6)
                )
            )
    return out


def _transcripts() -> list[str]:
    out: list[str] = []
    for path in transcript_files():
        for m in load_transcript(path):
            text = m.content if isinstance(m.content, str) else json.dumps(m.content)
            if len(text) > 20:
                out.append(text[:20_000])
    return out


def text_kinds() -> dict[str, list[str]]:
    """Every kind's texts (``transcripts`` is empty when the recorded runs are absent)."""
    return {
        "prose": _prose(),
        "code": _code(),
        "json": _json(),
        "paths": _paths(),
        "hex ids": _hex_ids(),
        "short chat turns": list(_SHORT),
        "chinese": list(_CHINESE),
        "cjk+emoji+rtl": list(_MIXED),
        "transcripts": _transcripts(),
    }
