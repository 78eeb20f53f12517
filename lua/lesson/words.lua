-- lua/lesson/words.lua - module "mha.lesson.words": every word the lesson runner and the answer checker
-- print, in English and Chinese (a lesson's own text is in the lesson file, as {en = ..., zh = ...}).

local words = {}

-- The runner's words (lua/lesson/lesson.lua): steps, exercises, commands.
words.runner = {
    en = {
        step = "step", exercise = "Exercise", of_lesson = "lesson", colon = ":", colon_space = ": ",
        ask = "Answer with answer(value) or :answer EXPR; :solution shows the lesson's own answer, Enter goes on.",
        batch_answer = "(batch mode: answered with the lesson's own solution)",
        correct = "correct", not_yet = "not yet",
        skipped = "(exercise skipped; :solution shows the answer)",
        the_end = "End of the lesson. :lessons lists the others; :restart starts this one again.",
        next_hint = "Enter (or :next) runs the next step; :back, :goto K, :run, :restart.",
        no_lesson = "no lesson is open: :lessons lists them, :open NAME opens one",
        no_exercise = "there is no exercise to answer at this step",
        replaying = function(k, seed)
            return string.format("(steps 1-%d run again quietly, with the lesson's random seed %d)", k, seed)
        end,
        resumed = function(n, k)
            return string.format("(lesson %d is still open at step %d: :reset ran its steps again from the start)", n, k)
        end,
        solution = "solution",
        error_in_step = "error in step %d",
        interrupted_step = "step %d stopped by Ctrl-C: Enter runs it again.",
        recover = function(k) return string.format("The lesson's variables may now be wrong for step %d: "
            .. ":goto %d rebuilds them by running the steps before it again and runs step %d; :restart "
            .. "starts the lesson over.", k, k, k) end,
        lessons = "Lessons (:open NAME or NUMBER):",
        lang_set = "Lessons are now in English.",
        lang_usage = ":lang en|zh (English or Chinese)",
        goto_range = ":goto: the step number must be between 1 and %d",
        goto_number = ":goto: '%s' is not a step number; write :goto K with K from 1 to %d",
        more = "-- more: Enter goes on, q stops pausing --",
        answers_from = "(batch mode: answered from %s)",
        answers_none = "(no answer left in %s: answered with the lesson's own solution)",
        plot = "plot", plot_kinds = {heatmap = "heatmap", heads = "heads", line = "line", bar = "bar"},
        series = "%d series", series_n = "series %d", bars = "%d bars", list_sep = ", ",
        no_lessons = "no lessons found (looked in %s; set MHA_LESSONS)",
        no_such_lesson = "no lesson '%s'; give a number from %d to %d or a name: %s",
        cannot_load = "(cannot load: %s)",
        open_usage = ":open NAME|NUMBER|PATH (:lessons lists them)",
    },
    zh = {
        step = "第", exercise = "练习", of_lesson = "课", colon = "：", colon_space = "：",
        ask = "用 answer(值) 或 :answer 表达式 作答；:solution 显示本课的答案，回车继续。",
        batch_answer = "（批处理模式：用本课自带的答案作答）",
        correct = "正确", not_yet = "还不对",
        skipped = "（跳过了练习；:solution 显示答案）",
        the_end = "本课结束。:lessons 列出其他课程；:restart 从头再来。",
        next_hint = "回车（或 :next）运行下一步；:back、:goto K、:run、:restart。",
        no_lesson = "没有打开的课程：:lessons 列出课程，:open 名称 打开一课",
        no_exercise = "这一步没有要回答的练习",
        replaying = function(k, seed)
            return string.format("（用本课的随机种子 %d 悄悄重跑了第 1-%d 步）", seed, k)
        end,
        resumed = function(n, k)
            return string.format("（第 %d 课仍停在第 %d 步：:reset 已从头重跑了它的各步）", n, k)
        end,
        solution = "答案",
        error_in_step = "第 %d 步出错",
        interrupted_step = "第 %d 步被 Ctrl-C 停下：按 Enter 重新运行它。",
        recover = function(k) return string.format("课程的变量现在可能不适合第 %d 步：:goto %d 重跑它之前的各步"
            .. "来重建它们，再运行第 %d 步；:restart 从头开始本课。", k, k, k) end,
        lessons = "课程（:open 名称或编号）：",
        lang_set = "课程现在使用中文。",
        lang_usage = ":lang en|zh（英文或中文）",
        goto_range = ":goto：步骤编号应在 1 到 %d 之间",
        goto_number = ":goto：“%s”不是步骤编号；请写 :goto K，K 为 1 到 %d",
        more = "-- 还有：回车继续，q 不再暂停 --",
        answers_from = "（批处理模式：答案取自 %s）",
        answers_none = "（%s 里没有剩下的答案：用本课自带的答案作答）",
        plot = "图", plot_kinds = {heatmap = "热图", heads = "各头", line = "折线图", bar = "柱状图"},
        series = "%d 条曲线", series_n = "曲线 %d", bars = "%d 根柱", list_sep = "，",
        no_lessons = "没有找到课程（找过 %s；请设置 MHA_LESSONS）",
        no_such_lesson = "没有课程“%s”；请给出 %d 到 %d 之间的编号或名称：%s",
        cannot_load = "（无法加载：%s）",
        open_usage = ":open 名称|编号|路径（:lessons 列出课程）",
    },
}

-- The checker's verdicts (lua/lesson/check.lua): what is wrong with an answer, as string.format formats.
words.check = {
    en = {
        shape = "your answer has shape %s; the expected one has shape %s",
        value = "your answer differs at %s: you have %.6g (tolerance %.0e)",
        scalar = "you gave %.6g; that is not the expected value (tolerance %.0e)",
        count = "your answer has %d number(s); the expected one has %d",
        kind = "your answer is %s; a %s is expected",
        string = "your answer is %q",
        malformed = "your answer cannot be read: %s",
        why_contains = "it contains a %s", why_ragged = "its rows have different lengths",
        why_tensor = "a tensor whose values could not be read", why_type = "a %s",
        error = "evaluating your answer failed: %s",
        nan = "your answer contains NaN (not a number) at %s",
    },
    zh = {
        shape = "你的答案形状是 %s；应为 %s",
        value = "你的答案在 %s 处不同：你的是 %.6g（容差 %.0e）",
        scalar = "你给的是 %.6g；这不是要的值（容差 %.0e）",
        count = "你的答案有 %d 个数；应有 %d 个",
        kind = "你的答案是 %s；需要的是 %s",
        string = "你的答案是 %q",
        malformed = "无法读取你的答案：%s",
        why_contains = "其中有一个 %s 值", why_ragged = "它的各行长度不同",
        why_tensor = "一个读不出数值的张量", why_type = "一个 %s 值",
        error = "计算你的答案时出错：%s",
        nan = "你的答案在 %s 处是 NaN（非数）",
    },
}

-- The text of a {en = ..., zh = ...} table in lang (English when it has none); a plain string as it is.
function words.pick(t, lang)
    if type(t) ~= "table" then return t end
    return t[lang or "en"] or t.en
end

return words
