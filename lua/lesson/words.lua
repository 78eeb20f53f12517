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
        replaying = function(k, seed) return string.format("(replaying steps 1-%d from seed %d)", k, seed) end,
        resumed = function(n, k) return string.format("(lesson %d is still open at step %d: :reset rebuilt its state from the seed)", n, k) end,
        solution = "solution",
        error_in_step = "error in step %d",
        recover = function(k) return string.format("The lesson's variables may now be wrong for step %d: "
            .. ":goto %d rebuilds them from the lesson's seed and runs step %d again; :restart starts the "
            .. "lesson over.", k, k, k) end,
        lessons = "Lessons (:open NAME or NUMBER):",
        lang_set = "Lessons are now in English.",
        lang_usage = ":lang en|zh (English or Chinese)",
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
        replaying = function(k, seed) return string.format("（从种子 %d 重放第 1-%d 步）", seed, k) end,
        resumed = function(n, k) return string.format("（第 %d 课仍停在第 %d 步：:reset 已从种子重建它的状态）", n, k) end,
        solution = "答案",
        error_in_step = "第 %d 步出错",
        recover = function(k) return string.format("课程的变量现在可能不适合第 %d 步：:goto %d 从本课的种子"
            .. "重建它们并重新运行第 %d 步；:restart 从头开始本课。", k, k, k) end,
        lessons = "课程（:open 名称或编号）：",
        lang_set = "课程现在使用中文。",
        lang_usage = ":lang en|zh（英文或中文）",
    },
}

-- The checker's verdicts (lua/lesson/check.lua): what is wrong with an answer, as string.format formats.
words.check = {
    en = {
        shape = "your answer has shape %s; the expected one has shape %s",
        value = "your answer differs at %s: you have %.6g (tolerance %.0e)",
        count = "your answer has %d number(s); the expected one has %d",
        kind = "your answer is %s; a %s is expected",
        string = "your answer is %q",
        malformed = "your answer cannot be read: %s",
        error = "evaluating your answer failed: %s",
        nan = "your answer contains NaN (not a number) at %s",
    },
    zh = {
        shape = "你的答案形状是 %s；应为 %s",
        value = "你的答案在 %s 处不同：你的是 %.6g（容差 %.0e）",
        count = "你的答案有 %d 个数；应有 %d 个",
        kind = "你的答案是 %s；需要的是 %s",
        string = "你的答案是 %q",
        malformed = "无法读取你的答案：%s",
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
