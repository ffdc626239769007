"""The demo course: "JavaScript Foundations", written for knowhub, plus one imagimodel.

``load_demo_content()`` creates it idempotently (by slug; pages already present are left as an
editor may have changed them) and indexes it through the ordinary reindex service, so a new user
has real lessons to search: scope, closures, the event loop, promises and async/await.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from ingestion import services
from ingestion.models import (
    Chapter,
    ContentBlock,
    Course,
    Imagimodel,
    Layer,
    Page,
    Subchapter,
    Zone,
)

logger = logging.getLogger(__name__)

K = ContentBlock.Kind

COURSE = {
    "slug": "javascript",
    "title": "JavaScript Foundations",
    "description": "How JavaScript really runs your code: scope, closures, the event loop, promises and async/await.",
}

# chapter → subchapter → pages; each page: (slug, title, concepts, summary, blocks)
CHAPTERS = [
    ("language-core", "The Language Core", [
        ("scope-and-hoisting", "Scope and Hoisting", [
            ("lexical-scope", "Lexical scope and the scope chain", ["scope", "lexical-scope", "scope-chain"],
             "Where a variable can be used is decided by where it is written, not by where a function is called.", [
                {"kind": K.TEXT, "heading": "Scope is decided when the code is written",
                 "text": "JavaScript uses lexical (static) scope: the variables a function can see are the ones "
                         "visible where the function is *defined* in the source, not where it is called. Each "
                         "function body and each block (`{ … }`) creates a new scope, nested inside the scope "
                         "that contains it."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Looking a name up: the scope chain",
                 "text": "When code reads a name, the engine looks in the current scope, then in the enclosing "
                         "scope, and so on out to the global scope. The first match wins, so an inner variable "
                         "*shadows* an outer one with the same name. If no scope has the name, reading it throws "
                         "a `ReferenceError`.",
                 "image_alt": "Three nested boxes: global scope containing outer() containing inner()",
                 "image_caption": "Lookups go outwards through the nested scopes, never inwards.",
                 "image_classification": "diagram", "language": "javascript",
                 "code": "const level = 'global';\n\nfunction outer() {\n  const level = 'outer';\n"
                         "  function inner() {\n"
                         "    return level; // found in outer's scope: 'outer'\n  }\n  return inner();\n}\n\n"
                         "outer(); // 'outer'"},
                {"kind": K.TEXT, "heading": "Dynamic `this` is not scope",
                 "text": "Scope answers *which variables* a function sees. `this` is different: for ordinary "
                         "functions it is set by how the function is called (`obj.method()`, `fn.call(x)`, `new`). "
                         "Arrow functions have no `this` of their own; they use the `this` of the scope they "
                         "were written in, exactly like any other outer variable."},
            ]),
            ("var-let-const", "var, let, const and the temporal dead zone", ["hoisting", "tdz", "let", "const", "var"],
             "var is function-scoped and hoisted as undefined; let and const are block-scoped and unusable "
             "before their declaration.", [
                {"kind": K.TEXT, "heading": "Three ways to declare",
                 "text": "`var` is scoped to the whole function (or the script) and can be redeclared. `let` and "
                         "`const` are scoped to the nearest block. `const` forbids *reassigning* the binding, "
                         "but the value it holds can still change: `const list = []; list.push(1)` is fine."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Hoisting and the temporal dead zone",
                 "text": "All declarations are registered when their scope is entered (\"hoisting\"). A `var` "
                         "starts out as `undefined`, so reading it early silently gives `undefined`. A `let` or "
                         "`const` exists but is uninitialised until its declaration runs; touching it before "
                         "that — the temporal dead zone (TDZ) — throws a `ReferenceError`. Function declarations "
                         "are hoisted with their body, so they can be called before the line that defines them.",
                 "image_alt": "Timeline of a block: TDZ from block start until the let line, then usable",
                 "image_caption": "The TDZ ends at the declaration line, not at the start of the block.",
                 "image_classification": "diagram", "language": "javascript",
                 "code": "console.log(a); // undefined (var is hoisted and initialised)\nvar a = 1;\n\n"
                         "console.log(b); // ReferenceError: Cannot access 'b' before initialization\nlet b = 2;\n\n"
                         "greet(); // works: function declarations are hoisted with their body\n"
                         "function greet() { return 'hi'; }"},
                {"kind": K.TEXT, "heading": "Which one to use",
                 "text": "Default to `const`; use `let` when the variable really is reassigned (a counter, an "
                         "accumulator); avoid `var` in new code. Block scoping prevents a whole family of bugs, "
                         "the most famous being the loop-and-callback bug explained in the closures chapter."},
            ]),
        ]),
        ("closures", "Closures", [
            ("what-a-closure-is", "What a closure is", ["closures", "lexical-scope", "garbage-collection"],
             "A closure is a function together with the variables of the scope it was created in, kept alive "
             "as long as the function is.", [
                {"kind": K.TEXT, "heading": "Definition",
                 "text": "Every function in JavaScript keeps a reference to the scope it was created in. When "
                         "a function is returned or passed elsewhere, it still reads and writes those variables, "
                         "even after the outer function has returned. That pairing of a function with its "
                         "surrounding variables is a closure. It captures *variables* (live bindings), not a "
                         "snapshot of their values."},
                {"kind": K.CODE_EDITOR, "heading": "A counter with private state",
                 "text": "Each call to `makeCounter` creates a fresh `count`; the two counters never share it, "
                         "and no outside code can reach it except through the returned functions.",
                 "files": [
                     {"name": "counter.js", "language": "javascript",
                      "code": "export function makeCounter() {\n  let count = 0;\n  return {\n"
                              "    increment: () => ++count,\n    current: () => count,\n  };\n}"},
                     {"name": "main.js", "language": "javascript",
                      "code": "import { makeCounter } from './counter.js';\n\nconst a = makeCounter();\n"
                              "const b = makeCounter();\na.increment();\na.increment();\n"
                              "console.log(a.current(), b.current()); // 2 0"},
                 ]},
                {"kind": K.TEXT, "heading": "Closures and memory",
                 "text": "Captured variables stay in memory as long as a function that can reach them is "
                         "reachable. A long-lived event listener or cache that closes over a large object keeps "
                         "that object alive; remove the listener or drop the reference when you are done."},
            ]),
            ("closures-in-practice", "Closures in practice: loops, private state, memoization",
             ["closures", "loops", "memoization"],
             "Closures explain the classic var-in-a-loop bug and power private state, factories and memoization.", [
                {"kind": K.TEXT_IMAGE_CODE, "heading": "The loop bug",
                 "text": "With `var` there is one `i` for the whole loop; every callback closes over that same "
                         "variable and reads it after the loop finished, so all print 3. With `let`, each "
                         "iteration gets a new binding, so each callback sees its own value.",
                 "image_alt": "Three callbacks pointing at one shared variable i versus three separate bindings",
                 "image_caption": "var: one shared binding. let: one binding per iteration.",
                 "image_classification": "diagram", "language": "javascript",
                 "code": "for (var i = 0; i < 3; i++) setTimeout(() => console.log(i)); // 3 3 3\n"
                         "for (let j = 0; j < 3; j++) setTimeout(() => console.log(j)); // 0 1 2"},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Memoization",
                 "text": "A closure can keep a cache next to a function so repeated calls with the same argument "
                         "return the stored result instead of recomputing it.",
                 "language": "javascript",
                 "code": "function memoize(fn) {\n  const cache = new Map();\n  return (arg) => {\n"
                         "    if (!cache.has(arg)) cache.set(arg, fn(arg));\n    return cache.get(arg);\n  };\n}\n\n"
                         "const slowSquare = (n) => { for (let k = 0; k < 1e7; k++); return n * n; };\n"
                         "const fastSquare = memoize(slowSquare);"},
            ]),
        ]),
    ]),
    ("asynchronous-javascript", "Asynchronous JavaScript", [
        ("the-event-loop", "The Event Loop", [
            ("call-stack-and-queues", "Call stack, task queue and microtasks",
             ["event-loop", "microtasks", "call-stack"],
             "One thread runs one task to completion, then drains every microtask, then the next task starts.", [
                {"kind": K.TEXT, "heading": "One thread, run to completion",
                 "text": "JavaScript runs your code on a single thread with one call stack. A function runs to "
                         "completion: nothing else can interrupt it. Asynchronous work (timers, network, user "
                         "events) is handled by the host (browser or Node.js), which queues a callback when the "
                         "work is done. The event loop picks the next callback only when the stack is empty."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Tasks versus microtasks",
                 "text": "Callbacks from `setTimeout`, I/O and UI events are *tasks* (macrotasks). Promise "
                         "reactions (`.then`, `await` continuations) and `queueMicrotask` are *microtasks*. After "
                         "each task the event loop drains the whole microtask queue before taking the next task "
                         "— so a promise callback always runs before a `setTimeout(…, 0)` queued at the same time.",
                 "image_alt": "Call stack, microtask queue and task queue with the event loop moving callbacks",
                 "image_caption": "Microtasks cut in line ahead of the next task.",
                 "image_classification": "diagram", "language": "javascript",
                 "code": "console.log('1 sync');\nsetTimeout(() => console.log('4 task'), 0);\n"
                         "Promise.resolve().then(() => console.log('3 microtask'));\nconsole.log('2 sync');\n"
                         "// prints: 1 sync, 2 sync, 3 microtask, 4 task"},
                {"kind": K.VIDEO, "video_title": "What the heck is the event loop anyway? (Philip Roberts, JSConf EU)",
                 "video_url": "https://www.youtube.com/watch?v=8aGhZQkoFbQ",
                 "transcript": "A classic visual walkthrough of the call stack, web APIs, the callback queue and "
                               "how the event loop moves callbacks onto the stack only when it is empty."},
            ]),
            ("timers-and-rendering", "Timers, rendering and long tasks", ["event-loop", "timers", "performance"],
             "Timers give a minimum delay, not an exact one; long tasks block rendering and input.", [
                {"kind": K.TEXT, "heading": "Timers are a minimum delay",
                 "text": "`setTimeout(fn, 100)` means \"queue `fn` as a task no sooner than 100 ms from now\". "
                         "If the stack is busy or other tasks are waiting, it runs later. Browsers also clamp "
                         "nested timers to at least 4 ms and throttle timers in background tabs."},
                {"kind": K.TEXT, "heading": "Rendering happens between tasks",
                 "text": "The browser can only repaint between tasks, after microtasks are drained. A task that "
                         "runs for 200 ms freezes the page for 200 ms: clicks and scrolls wait. Split long work "
                         "into chunks that yield back to the event loop (`await new Promise(r => setTimeout(r))`, "
                         "`scheduler.yield()` where available), or move it to a Web Worker. Beware that an "
                         "endless chain of microtasks blocks rendering just like one long task."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Yielding in a loop", "language": "javascript",
                 "text": "Process a big array in slices and give the browser a chance to paint between them.",
                 "code": "async function processAll(items, work) {\n  for (let i = 0; i < items.length; i++) {\n"
                         "    work(items[i]);\n    if (i % 500 === 0) await new Promise((r) => setTimeout(r, 0));\n"
                         "  }\n}"},
            ]),
        ]),
        ("promises-and-async-await", "Promises and async/await", [
            ("promises", "Promises: states, chaining and errors", ["promises", "error-handling", "microtasks"],
             "A promise is pending, then fulfilled or rejected exactly once; then() returns a new promise, "
             "which makes chains.", [
                {"kind": K.TEXT, "heading": "Three states, settled once",
                 "text": "A promise represents a value that will be available later. It starts *pending* and "
                         "settles exactly once, either *fulfilled* with a value or *rejected* with a reason; "
                         "after that it never changes. Handlers attached with `.then`, `.catch` and `.finally` "
                         "always run asynchronously, as microtasks, even if the promise is already settled."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Chaining", "language": "javascript",
                 "text": "`.then` returns a new promise resolved with whatever its callback returns; returning a "
                         "promise from a callback makes the chain wait for it. A thrown error or rejection skips "
                         "the following `.then` callbacks until a `.catch` handles it.",
                 "code": "fetch('/api/user')\n  .then((res) => {\n"
                         "    if (!res.ok) throw new Error(`HTTP ${res.status}`);\n"
                         "    return res.json();\n  })\n  .then((user) => fetch(`/api/orders?user=${user.id}`))\n"
                         "  .then((res) => res.json())\n  .catch((err) => console.error('failed:', err))\n"
                         "  .finally(() => hideSpinner());"},
                {"kind": K.TEXT, "heading": "Common mistakes",
                 "text": "Forgetting to `return` inside `.then` breaks the chain (the next step gets `undefined` "
                         "and does not wait). Nesting `.then` inside `.then` instead of returning recreates "
                         "callback hell. A rejection that nobody handles triggers an `unhandledrejection` event "
                         "(and crashes Node.js by default), so end every chain with `.catch` or `await` it in a "
                         "`try`."},
            ]),
            ("async-await", "async/await and running work concurrently", ["async-await", "promises", "concurrency"],
             "await pauses only the async function; start independent work first and await together with "
             "Promise.all.", [
                {"kind": K.TEXT, "heading": "What await does",
                 "text": "An `async` function always returns a promise. `await p` pauses *that function* until "
                         "`p` settles, then resumes it in a microtask with the value (or throws the rejection "
                         "reason, so ordinary `try/catch` works). The rest of the program keeps running while it "
                         "waits; `await` never blocks the thread."},
                {"kind": K.TEXT_IMAGE_CODE, "heading": "Sequential versus concurrent", "language": "javascript",
                 "text": "Awaiting one call after another makes independent requests wait for each other. Start "
                         "them first, then await them together.",
                 "code": "// slow: about 2 round trips\nconst user = await getUser(id);\n"
                         "const feed = await getFeed(id);\n\n"
                         "// fast: both requests in flight at once\n"
                         "const [user2, feed2] = await Promise.all([getUser(id), getFeed(id)]);"},
                {"kind": K.TEXT, "heading": "Choosing a combinator",
                 "text": "`Promise.all` fulfils with every value, or rejects as soon as one input rejects. "
                         "`Promise.allSettled` waits for all and reports each `{status, value | reason}`, never "
                         "rejecting. `Promise.race` settles like the first input to settle (useful for timeouts). "
                         "`Promise.any` fulfils with the first fulfilment and rejects with an `AggregateError` only "
                         "if all reject."},
            ]),
        ]),
    ]),
]  # fmt: skip

IMAGIMODEL = {
    "slug": "event-loop-restaurant",
    "title": "The Event Loop Restaurant",
    "description": "A one-chef restaurant that pictures how JavaScript schedules work: the chef is the "
    "call stack, orders wait on a rail, and VIP tickets are always cooked before the next order.",
    "concepts": ["event-loop", "microtasks", "call-stack"],
    "layers": [
        ("Chef at the Stove", "The chef is the call stack: one chef, one dish at a time, always finished "
         "before starting another. Nobody can interrupt the chef mid-dish."),
        ("Order Rail", "Tickets on the rail are tasks: timer callbacks, clicks, network responses. The chef "
         "takes the next ticket only when the stove is free."),
        ("VIP Counter", "The VIP counter holds microtasks (promise callbacks). After every dish the chef serves "
         "every VIP ticket, including VIP tickets added meanwhile, before touching the rail again."),
        ("Waiter Loop", "The waiter is the event loop, walking in circles: stove free? serve all VIP tickets, "
         "let the dining room be repainted, then hand the chef the next rail ticket."),
    ],
    "zones": [
        ("Kitchen door", "Where the host (browser or Node.js) drops finished timers and responses onto the rail.",
         0.15, 0.5, 1.8),
        ("VIP bell", "Ring it with Promise.resolve().then(...) or queueMicrotask(...): served before any rail ticket.",
         0.7, 0.3, 2.2),
    ],
}  # fmt: skip


@transaction.atomic
def _create_content() -> dict:
    now = timezone.now()
    course, course_created = Course.objects.get_or_create(
        slug=COURSE["slug"],
        defaults={"title": COURSE["title"], "description": COURSE["description"], "published_at": now},
    )
    pages_created = 0
    for c_order, (c_slug, c_title, subchapters) in enumerate(CHAPTERS):
        chapter, _ = Chapter.objects.get_or_create(
            course=course, slug=c_slug, defaults={"title": c_title, "order": c_order}
        )
        for s_order, (s_slug, s_title, pages) in enumerate(subchapters):
            sub, _ = Subchapter.objects.get_or_create(
                chapter=chapter, slug=s_slug, defaults={"title": s_title, "order": s_order}
            )
            for p_order, (p_slug, p_title, concepts, summary, blocks) in enumerate(pages):
                page, created = Page.objects.get_or_create(
                    subchapter=sub, slug=p_slug,
                    defaults={"title": p_title, "order": p_order, "concepts": concepts, "summary": summary,
                              "published_at": now},
                )  # fmt: skip
                if created:
                    pages_created += 1
                    for b_order, block in enumerate(blocks):
                        ContentBlock.objects.create(page=page, order=b_order, **block)
    model, model_created = Imagimodel.objects.get_or_create(
        slug=IMAGIMODEL["slug"],
        defaults={"title": IMAGIMODEL["title"], "description": IMAGIMODEL["description"], "course": course,
                  "concepts": IMAGIMODEL["concepts"], "published_at": now},
    )  # fmt: skip
    if model_created:
        for order, (name, description) in enumerate(IMAGIMODEL["layers"]):
            Layer.objects.create(imagimodel=model, order=order, name=name, description=description)
        for order, (name, description, x, y, zoom) in enumerate(IMAGIMODEL["zones"]):
            Zone.objects.create(imagimodel=model, order=order, name=name, description=description, x=x, y=y, zoom=zoom)
    return {"course_created": course_created, "pages_created": pages_created, "imagimodel_created": model_created}


class DemoCourseCounts(dict):
    """``load_demo_content``'s counts (a dict, as JSON prints it) that can say them in words."""

    def sentence(self) -> str:
        made = "created" if self.get("course_created") else "already there"
        return (
            f"Demo course ({made}): {self.get('pages_created', 0)} pages created; indexed on ingest run "
            f"#{self.get('run_id')}: {self.get('created', 0)} chunks created, {self.get('updated', 0)} updated, "
            f"{self.get('unchanged', 0)} unchanged, {self.get('embedded', 0)} embedded, {self.get('failed', 0)} failed."
        )


def load_demo_content() -> DemoCourseCounts:
    """Create the demo course and imagimodel (idempotent) and index them; returns the counts."""
    created = _create_content()
    run = services.reindex(types=["pages", "imagimodels"])
    logger.info("demo course indexed: run %s", run.pk)
    return DemoCourseCounts(
        **created,
        **{
            k: v for k, v in run.summary().items()
            if k in ("run_id", "created", "updated", "unchanged", "embedded", "failed")
        },
    )
