"""Which code runs on several threads at once, which objects it shares, and which locks it holds.

Works from the IR of the whole project (the summarizer's thread events, see `cudalint.core.ir.Event`):

1. every function body is flattened into its events, each with the locks held around it (`with`
   blocks and acquire/release pairs; a lock counts only when every path holds it) and whether it
   sits in a loop;
2. thread contexts start at the module top level (the main thread), at framework entry points
   (FastAPI/Flask handlers, Streamlit scripts) and at every thread start (`threading.Thread`,
   executors, `asyncio.to_thread`, gradio callbacks...), and flow through calls, each carrying the
   locks held by every path from its entry;
3. each ref (a module global, a `self` attribute, a local, a factory's result) is resolved to the
   object it holds: where it was created, whether it is shared (a global, a cached loader's result)
   or made per call.

A lock is held "by every path" (must-analysis), unlike the flow engine's gen-only facts, so this is
its own small walk rather than a fact in `cudalint.analysis.flow`.
"""
from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from cudalint.summary import concurrent_calls
from cudalint.core.catalogue import Catalogue
from cudalint.core.findings import Step
from cudalint.core.ir import Event, Function, ModuleIR
from cudalint.core.project import Project
from cudalint.analysis.thread_model import Context, Creation, MAIN, ThreadModel, Use, flatten, sequential
from cudalint.analysis.thread_objects import _Resolve

if TYPE_CHECKING:
    from cudalint.analysis.thread_model import FnKey, Key, Site


_MAX_CONTEXTS = 12


class ThreadAnalysis(_Resolve):
    def __init__(self, project: Project, catalogue: Catalogue):
        self.project = project
        self.cat = catalogue
        self.methods = catalogue.context_methods()
        self.sites: dict[FnKey, list[Site]] = {}
        self.fns: dict[FnKey, tuple[ModuleIR, Optional[Function]]] = {}
        self.binds: dict[Key, list[tuple[str, ModuleIR, str, int, bool]]] = {}
        self.returns: dict[FnKey, list[tuple[str, ModuleIR, str, int]]] = {}
        self.contexts: dict[FnKey, dict[str, Context]] = {}
        self.default_many = False
        self._obj_cache: dict = {}
        self._direct: dict = {}
        self._stores: Optional[dict] = None
        self._index()

    # ---------- indexing ------------------------------------------------------------------------
    def _index(self) -> None:
        for mod in self.project.modules:
            bodies = [("", mod.top)] + [(q, f.body) for q, f in mod.functions.items()]
            for qual, body in bodies:
                key = (mod.path, qual)
                self.fns[key] = (mod, mod.functions.get(qual) if qual else None)
                sites = flatten(body)[0]
                self.sites[key] = sites
                for site in sites:
                    ev = site.event
                    if ev.kind == "bind":
                        k = self.canon(ev.data[0], mod, qual)
                        if k is not None:
                            self.binds.setdefault(k, []).append((ev.data[1], mod, qual, ev.loc[0], site.in_loop))
                    elif ev.kind == "return" and ev.data:
                        self.returns.setdefault(key, []).append((ev.data[0], mod, qual, ev.loc[0]))
                    elif ev.kind == "concurrency" and ev.data[1] == "many":
                        self.default_many = True
        # arguments handed to a thread's target are its parameters
        for (path, qual), sites in list(self.sites.items()):
            mod = self.fns[(path, qual)][0]
            for site in sites:
                ev = site.event
                if ev.kind == "call_refs":
                    self._call_binds(ev, mod, qual)
                    continue
                if ev.kind != "thread_start" or not ev.data[1] or not any(ev.data[6]):
                    continue
                target = self.function(ev.data[1], mod)
                if target is None:
                    continue
                tmod, tfn = target
                params = [p for p in tfn.params if p not in ("self", "cls")]
                for param, arg in zip(params, ev.data[6]):
                    if arg:
                        self.binds.setdefault(("l", tmod.path, tfn.qualname, param), []).append((f"ref:{arg}", mod, qual, ev.loc[0], False))

    def _call_binds(self, ev: Event, mod: ModuleIR, qual: str) -> None:
        """`Worker(llm)`, `use_it(llm, p)`: the callee's parameters hold what the call passes."""
        target = self.function(ev.data[0], mod)
        if target is None:
            return
        tmod, tfn = target
        params = list(tfn.params)
        offset = 1 if params and params[0] in ("self", "cls") else 0
        for slot, ref in ev.data[1]:
            if slot.isdigit():
                i = int(slot) + offset
                param = params[i] if i < len(params) else None
            else:
                param = slot if slot in params else None
            if param:
                self.binds.setdefault(("l", tmod.path, tfn.qualname, param), []).append((f"ref:{ref}", mod, qual, ev.loc[0], False))

    # ---------- contexts ------------------------------------------------------------------------
    def roots(self) -> list[tuple[FnKey, Context]]:
        out = []
        for mod in sorted(self.project.modules, key=lambda m: m.path):
            streamlit = self.script_rerun(mod)
            if streamlit is not None:
                step = Step(mod.path, streamlit, "Streamlit runs this script on its own thread for every session")
                out.append(((mod.path, ""), Context(id=f"streamlit:{mod.path}", many=True, locks=frozenset(), steps=(step,), how="Streamlit's script threads (one per session)")))
            else:
                out.append(((mod.path, ""), MAIN))
            for qual, fn in mod.functions.items():
                mode = self.endpoint(fn, mod) or self.handler_method(qual, mod)
                if mode is None:
                    continue
                if fn.is_async and mode == "sync":
                    # on the event loop: its own work never overlaps, what it hands to threads does
                    step = Step(mod.path, fn.loc[0], f"{qual}() handles requests as coroutines on the event loop, several at once")
                    out.append(((mod.path, qual), replace(MAIN, tasks=True, steps=(step,))))
                    continue
                step = Step(mod.path, fn.loc[0], f"{qual}() handles requests on the server's thread pool, several at once")
                out.append(((mod.path, qual), Context(id=f"endpoint:{mod.path}:{qual}", many=True, locks=frozenset(), steps=(step,), how="the web server's request threads")))
        return out

    def script_rerun(self, mod: ModuleIR) -> Optional[int]:
        for site in flatten(mod.top)[0]:
            ev = site.event
            if ev.kind == "import_lib":
                for name in ev.data:
                    if any(api.get("reruns_script") for api in self.cat.imports.get(name, ())):
                        return ev.loc[0]
        return None

    def endpoint(self, fn: Function, mod: ModuleIR) -> Optional[str]:
        for dec in fn.decorators:
            for name in (dec, self.imported_method(dec, mod)):
                for api in self.cat.calls_named(name) if name else ():
                    if api.get("endpoint"):
                        return api.get("endpoint")
        return None

    def handler_method(self, qual: str, mod: ModuleIR) -> Optional[str]:
        """`class Bot(discord.Client): async def on_message(...)`: a method the framework calls for
        every event, as its catalogue entry's `handlers` patterns say."""
        cls, _, method = qual.rpartition(".")
        if not cls or cls not in mod.classes:
            return None
        api = self.catalogued_base(mod, cls, "handlers")
        fn = mod.functions.get(qual)
        # only coroutines: discord.py awaits what it dispatches, so a `def on_x` helper is never called as a handler
        if api is not None and fn is not None and fn.is_async and any(fnmatch.fnmatchcase(method, pat) for pat in str(api.get("handlers")).split()):
            return api.get("endpoint") or None
        return None

    def imported_method(self, symbol: str, mod: ModuleIR) -> Optional[str]:
        """`application.app.route` -> `flask.Flask.route` when `app = Flask(...)` in `application`."""
        obj, _, method = symbol.rpartition(".")
        key = self.canon("m:" + obj, mod, "") if obj else None
        for origin, *_ in self.binds.get(key, ()) if key else ():
            if origin.startswith("t:"):
                return f"{origin[2:]}.{method}"
        return None

    def run(self) -> ThreadModel:
        model = ThreadModel()
        work: list[tuple[FnKey, Context]] = []
        for key, ctx in self.roots():
            self._add(key, ctx, work)
        while work:
            key, ctx = work.pop()
            if self.contexts.get(key, {}).get(ctx.id) != ctx:
                continue  # superseded by a narrower lock set
            self._walk(key, ctx, work)
        for key, ctxs in self.contexts.items():
            for ctx in ctxs.values():
                self._collect(key, ctx, model)
        # a call concurrent by itself needs no caller: judge it in functions no root reaches too
        for key, sites in self.sites.items():
            if not self.contexts.get(key):
                for site in sites:
                    if site.event.kind == "concurrent_use":
                        self._concurrent_use(site.event, self.fns[key][0], key, MAIN, model)
        for obj_ref, mod, qual, ev, ctx in self._direct.values():
            method, _, ref = obj_ref.partition("|")
            obj = self.obj(self.canon(ref, mod, qual))
            if obj is None or obj.identity[0] == "fresh":
                continue
            method = "__iter__" if method == "iter" else method
            if method != "__iter__" and method not in self.methods.get(obj.cls, ()):
                continue
            model.uses.append(Use(obj, ctx, ctx.locks, (mod.path, qual), ev, method, mod.path))
        return model

    def _add(self, key: FnKey, ctx: Context, work: list) -> None:
        known = self.contexts.setdefault(key, {})
        old = known.get(ctx.id)
        if old is None:
            if len(known) >= _MAX_CONTEXTS:
                return
            known[ctx.id] = ctx
            work.append((key, ctx))
            return
        locks = old.locks & ctx.locks
        if locks != old.locks or (ctx.many and not old.many) or (ctx.tasks and not old.tasks):
            new = replace(old, locks=locks, many=old.many or ctx.many, tasks=old.tasks or ctx.tasks)
            if ctx.tasks and not old.tasks:
                new = replace(new, steps=ctx.steps)  # the witness shows how the tasks came to overlap
            known[ctx.id] = new
            work.append((key, new))

    def _walk(self, key: FnKey, ctx: Context, work: list) -> None:
        mod, _fn = self.fns[key]
        qual = key[1]
        for site in self.sites.get(key, ()):
            ev = site.event
            if ev.kind == "call":
                self._call(ev, site, mod, qual, ctx, work)
            elif ev.kind == "thread_start":
                self._thread(ev, site, mod, qual, ctx, work)

    def _call(self, ev: Event, site: Site, mod: ModuleIR, qual: str, ctx: Context, work: list) -> None:
        symbol = ev.data[0]
        locks = ctx.locks | self.effective_locks(site.held, mod, qual)
        thread_cls = self.thread_subclass_start(symbol, mod)
        if thread_cls is not None:
            cmod, cls = thread_cls
            run = self.project.function(cmod, f"{cls}.run")
            if run is not None:
                many = site.in_loop or ctx.many
                step = Step(mod.path, ev.loc[0], f"{ev.text} runs {cls}.run() on a new thread" + (" (in a loop)" if site.in_loop else ""))
                new = Context(id=f"thread:{mod.path}:{ev.loc[0]}", many=many, locks=frozenset(), steps=ctx.steps + (step,), how="threads started here", parent=(mod.path, qual), spawn_many=site.in_loop, own_instance=(cmod.path, cls))
                self._add((run[0].path, run[1].qualname), new, work)
            return
        target = self.function(symbol, mod)
        if target is None:
            return
        tmod, tfn = target
        if tfn.is_generator and any(s.event.kind == "thread_start" and s.event.loc[0] == ev.loc[0] for s in self.sites.get((mod.path, qual), ())):
            return  # a generator handed to another thread: its body runs there, not here
        if self.singleton(tfn) == "locked":
            locks = locks | {("cache", tmod.path, tfn.qualname)}
        step = Step(mod.path, ev.loc[0], f"{tfn.qualname}() is called here")
        hand = self.decorator_thread(tfn, tmod)
        if hand is not None:
            # `@run_async def f(...)`: the decorator's wrapper runs f on a worker thread
            dmod, dec, wrapper, start_site = hand
            start = start_site.event
            if start.data[5]:  # the wrapper waits for the thread: a lock it holds around the start counts
                locks = locks | self.effective_locks(start_site.held, dmod, wrapper)
            spawn_many = site.in_loop or ctx.tasks or ctx.many
            short = start.data[0].rsplit(".", 1)[-1].lstrip(".")
            how = Step(dmod.path, start.loc[0], f"@{dec}'s wrapper runs it with {short}(...) on " + ("several worker threads at once" if spawn_many else "another thread"))
            new = Context(
                id=f"thread:{mod.path}:{ev.loc[0]}",
                many=spawn_many,
                locks=locks if start.data[5] else frozenset(),
                steps=ctx.steps + (step, how),
                how=f"threads of @{dec}",
                parent=(mod.path, qual),
                spawn_many=spawn_many,
            )
            self._add((tmod.path, tfn.qualname), new, work)
            return
        self._add((tmod.path, tfn.qualname), replace(ctx, locks=locks, steps=ctx.steps + (step,)), work)

    def decorator_thread(self, fn: Function, mod: ModuleIR) -> Optional[tuple[ModuleIR, str, str, Site]]:
        """A project decorator whose wrapper hands the function it wraps to a thread start
        (`def run_async(func): async def wrapper(*a): return await asyncio.to_thread(func, *a)`):
        (the decorator's module, its name, the wrapper's name, the site of that thread start), or None."""
        if fn.is_async:
            return None
        for dec in fn.decorators:
            target = self.function(dec, mod) if dec else None
            if target is None or not target[1].params:
                continue
            dmod, dfn = target
            handed = f"__call__|v:{dfn.qualname}:{dfn.params[0]}"
            for qual, inner in dmod.functions.items():
                if not qual.startswith(dfn.qualname + "."):
                    continue
                for site in self.sites.get((dmod.path, qual), ()):
                    ev = site.event
                    if ev.kind == "thread_start" and ev.data[3] == handed and not any(a.get("starts_task") for a in self.cat.calls_named(ev.data[0])):
                        return dmod, dfn.qualname, qual, site
        return None

    def thread_subclass_start(self, symbol: str, mod: ModuleIR) -> Optional[tuple[ModuleIR, str]]:
        if not symbol.endswith(".start"):
            return None
        target = self.project.resolve_symbol(symbol[: -len(".start")], mod)
        if target is None:
            return None
        tmod, cls = target
        info = tmod.classes.get(cls)
        if info is None:
            return None
        if any(b in ("threading.Thread", "multiprocessing.dummy.Process") for b in info.bases):
            return tmod, cls
        return None

    def _thread(self, ev: Event, site: Site, mod: ModuleIR, qual: str, ctx: Context, work: list) -> None:
        api, symbol, recv, obj, many, waits, _args, conc = ev.data
        # a one-worker pool (`ThreadPoolExecutor(max_workers=1)`): everything handed to it runs on
        # one thread, one at a time, wherever it was submitted from
        serial = self.canon(conc[len("serial:"):], mod, qual) if conc.startswith("serial:") else None
        if serial is not None:
            conc = "one"
        apis = self.cat.calls_named(api) or self.cat.methods.get(api.lstrip("."), ())
        if not many and conc == "" and any(a.get("concurrency") for a in apis):
            many = "1" if self.default_many else ""
        # a coroutine in flight several times at once starts its work several times at once
        spawn_many = (bool(many) or site.in_loop or ctx.tasks) and serial is None
        locks = (ctx.locks | self.effective_locks(site.held, mod, qual)) if waits else frozenset()
        short = api.rsplit(".", 1)[-1] if not api.startswith(".") else api[1:]
        handler = self.handler_class(symbol, mod, apis)
        if handler is not None:
            # a server runs a new instance of the handler class per request, each on its own thread
            hmod, hcls, methods = handler
            step = Step(mod.path, ev.loc[0], f"{short}(...) runs {hcls}'s request methods on a new thread per request, several at once")
            new = Context(id=f"thread:{mod.path}:{ev.loc[0]}", many=True, locks=frozenset(), steps=ctx.steps + (step,), how=f"the request threads of {short}(...)", parent=(mod.path, qual), spawn_many=True, own_instance=(hmod.path, hcls))
            for key in methods:
                self._add(key, new, work)
            return
        target = self.function(symbol, mod) if symbol else None
        if target is not None:
            tmod, tfn = target
            what = f"{tfn.qualname}()" if "<lambda" not in tfn.qualname else "the lambda"
        else:
            method, _, ref = obj.partition("|")
            name = ref.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
            what = f"iterating {name}'s stream" if method == "iter" else (f"{name}()" if method == "__call__" else f"{name}.{method}()")
            tmod, tfn = None, None
        task = any(a.get("starts_task") for a in apis)
        if task:
            where = "the event loop as several tasks at once" if spawn_many else "the event loop as a task"
        else:
            where = "several worker threads at once" if spawn_many else ("the pool's one worker thread" if serial is not None else "another thread")
        step = Step(mod.path, ev.loc[0], f"{short}(...) runs {what} on {where}" + (" (in a loop)" if site.in_loop and not many else ""))
        if task and (tfn is None or not tfn.is_async):
            return  # a task runs a coroutine: nothing else given to it runs anywhere else
        if tfn is not None and tfn.is_async:
            # coroutines run on the event loop; several tasks of it at once when started so
            new = replace(ctx, locks=ctx.locks, steps=ctx.steps + (step,), tasks=ctx.tasks or spawn_many)
            self._add((tmod.path, tfn.qualname), new, work)
            return
        own = None
        if tfn is not None and "." in tfn.qualname:
            own = self.own_instance(recv, mod, qual, site, tfn, tmod)
        how = {
            "threading.Thread": "threads started with threading.Thread",
            "threading.Timer": "a timer thread",
        }.get(api, f"threads of {short}(...)")
        new = Context(
            id=f"thread:{mod.path}:{ev.loc[0]}:{ev.loc[1]}" if serial is None else f"serial:{serial}",
            many=(spawn_many or ctx.many) and serial is None,
            locks=locks,
            steps=ctx.steps + (step,),
            how=how,
            parent=(mod.path, qual),
            spawn_many=spawn_many,
            own_instance=own,
            waited=waits == "await",
        )
        if tfn is not None:
            self._add((tmod.path, tfn.qualname), new, work)
        elif obj:
            # the object itself is the work (`executor.map(llm, prompts)`): a use at the start
            self._direct[(mod.path, ev.loc, new.id, obj)] = (obj, mod, qual, ev, new)

    def own_instance(self, recv: str, mod: ModuleIR, qual: str, site: Site, tfn: Function, tmod: ModuleIR) -> Optional[tuple[str, str]]:
        """A bound method started on an instance made for this thread alone (`Worker().loop`)."""
        cls = tfn.qualname.rsplit(".", 1)[0]
        if recv == "":
            return None if site.in_loop else (tmod.path, cls)  # self.loop: one thread per instance
        key = self.canon(recv, mod, qual)
        for origin, bmod, bfn, _line, in_loop in self.binds_of(key) if key else ():
            if origin.startswith("c:") and bfn == qual and (in_loop or not site.in_loop):
                made = self.project.resolve_symbol(origin[2:], bmod)
                if made is not None and made[1] == cls:
                    return (tmod.path, cls)
        return None

    # ---------- uses --------------------------------------------------------------------------------
    def _collect(self, key: FnKey, ctx: Context, model: ThreadModel) -> None:
        mod, _ = self.fns[key]
        qual = key[1]
        sites = self.sites.get(key, ())
        iterated = {s.event.data[1] for s in sites if s.event.kind == "llama_iter"}
        for site in sites:
            ev = site.event
            if ev.kind == "llama_new":
                locks = ctx.locks | self.effective_locks(site.held, mod, qual)
                model.creations.append(Creation(ctx, locks, key, ev, mod.path))
                continue
            if ev.kind == "llama_use":
                method, ref, flag = ev.data
                if flag == "handed":
                    continue  # a thread start consumes it (see _direct)
            elif ev.kind == "llama_iter":
                method, ref, flag = "__iter__", ev.data[0], "iter"
            elif ev.kind == "concurrent_use":
                self._concurrent_use(ev, mod, key, ctx, model)
                continue
            elif ev.kind == "call":
                method, ref, flag = "__call__", "m:" + ev.data[0], ""
                if ev.data[0].startswith(":"):
                    continue
            else:
                continue
            obj = self.obj(self.canon(ref, mod, qual))
            if obj is None or obj.identity[0] == "fresh":
                continue
            methods = self.methods.get(obj.cls, ())
            if method != "__iter__" and method not in methods:
                continue
            streams = self._streams(obj.cls, method)
            locks = ctx.locks | self.effective_locks(site.held, mod, qual)
            if method != "__iter__" and (streams == "*" or (streams == "stream" and flag not in ("", "?"))):
                if flag.startswith("bound:") and flag[6:] in iterated:
                    continue  # the iteration below is the use
                if flag != "iter":
                    locks = frozenset()  # consumed after this call returns, outside these locks
            model.uses.append(Use(obj, ctx, locks, key, ev, method, mod.path))

    def _concurrent_use(self, ev: Event, mod: ModuleIR, key: FnKey, ctx: Context, model: ThreadModel) -> None:
        """A call that runs the receiver's context on several threads by itself (`llm.batch(...)`)."""
        method, ref = ev.data
        obj = self.obj(self.canon(ref, mod, key[1]))
        if obj is None or obj.identity[0] == "fresh":
            return
        if not any(a.get("concurrent_use") for a in self.cat.calls_named(f"{obj.cls}.{method}")):
            return
        inner = concurrent_calls.context_of(ctx, ev, method, key)
        model.uses.append(Use(obj, inner, inner.locks, key, ev, method, mod.path))

    def _streams(self, cls: str, method: str) -> str:
        for api in self.cat.calls_named(f"{cls}.{method}"):
            if api.get("streams"):
                return api.get("streams")
        return ""


def concurrent(a: Use, b: Use) -> bool:
    """Can these two uses of one object run at the same time?"""
    ident = a.obj.identity
    if ident[-1] == "elem":
        if a.ctx.id == b.ctx.id and a.ctx.spawn_many:
            return False  # threads started in a loop may each take their own element of the container
        if ident[0] == "l" and not (a.ctx.parent == b.ctx.parent == (ident[1], ident[2])):
            return False  # a function's local container reaches only the threads that function starts
    if ident[0] == "a":
        owner = (ident[1], ident[2])
        if a.ctx.own_instance == owner or b.ctx.own_instance == owner:
            return False  # each thread has its own instance
    if ident[0] == "g" and a.ctx.id == f"streamlit:{ident[1]}" == b.ctx.id:
        return False  # a script's globals are made anew by every run
    if a.ctx.id != b.ctx.id:
        return not sequential(a.ctx, b.ctx)
    if ident[0] == "l":
        fn = (ident[1], ident[2])
        if a.ctx.parent == fn:
            return a.ctx.spawn_many  # threads started by one run of the function that made it
        return False  # each run of the function makes its own
    return a.ctx.many


def analyze(project: Project, catalogue: Catalogue) -> ThreadModel:
    return ThreadAnalysis(project, catalogue).run()
