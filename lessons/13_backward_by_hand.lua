-- lessons/13_backward_by_hand.lua - backward through one attention head by hand: dV, dP, dS, dQ, dK, each
-- printed and held against autograd; why the fused backward needs only each row's log-sum-exp.
return lesson{
    name = "backward_by_hand", seed = 13,
    title = {en = "Backward through one head, by hand", zh = "手算一个头的反向传播"},
    summary = {en = "dV, dP, dS, dQ, dK against autograd; the log-sum-exp trick",
               zh = "dV、dP、dS、dQ、dK 与自动求导对照；log-sum-exp 技巧"},

    step{
        title = {en = "The forward, recorded", zh = "记录下来的前向计算"},
        text = {
            en = [[
One head, 4 tokens, d_k = 3. Q, K and V are leaves that require gradients, so every op on them is
recorded. The loss is sum(O ⊙ G) for a fixed G: its gradient with respect to O is exactly G, so G
plays the part of dO, the gradient that arrives from the layers above.

    S = Q·Kᵀ/√d_k     P = softmax(S)     O = P·V]],
            zh = [[
一个头，4 个词元，d_k = 3。Q、K、V 是需要梯度的叶子，所以对它们的每个运算都会被记录。损失是
sum(O ⊙ G)，G 固定：它对 O 的梯度恰好是 G，所以 G 扮演 dO 的角色，即从上面各层传下来的梯度。

    S = Q·Kᵀ/√d_k     P = softmax(S)     O = P·V]],
        },
        code = [[
Q = mha.randn(4, 3):requires_grad(true)
K = mha.randn(4, 3):requires_grad(true)
V = mha.randn(4, 3):requires_grad(true)
G = mha.randn(4, 3)
S = Q:matmul(K:transpose(1, 2)) / math.sqrt(3)
P = mha.softmax(S, 2)
O = P:matmul(V)
loss = (O * G):sum()
loss:backward()
show(V:grad(), {title = tr{en = "autograd: dV", zh = "自动求导：dV"}})]],
    },

    step{
        title = {en = "dV = Pᵀ·dO", zh = "dV = Pᵀ·dO"},
        text = {
            en = [[
O = P·V is a matrix product, so dV = Pᵀ·dO: key j collects the gradient of every query that
attended to it, weighted by how much it did. We compute by hand on detached copies (no graph).]],
            zh = [[
O = P·V 是矩阵乘法，所以 dV = Pᵀ·dO：键 j 收集所有关注它的查询的梯度，按关注的程度加权。我们在
分离出来的副本上手算（不建图）。]],
        },
        code = [[
p, q, k, v = P:detach(), Q:detach(), K:detach(), V:detach()
dO = G
dV = p:transpose(1, 2):matmul(dO)
show(dV, {title = tr{en = "by hand: dV", zh = "手算：dV"}})
print(tr{en = "max |dV - autograd| < 1e-5:",
         zh = "max |dV - 自动求导| < 1e-5："},
      (dV - V:grad()):abs():max():item() < 1e-5)]],
    },

    step{
        title = {en = "dP and dS: through the softmax", zh = "dP 与 dS：穿过 softmax"},
        text = {
            en = [[
dP = dO·Vᵀ. Each row of P is a softmax, whose Jacobian is diag(p) − p·pᵀ; applied to a row of dP
that is

    dS = P ⊙ (dP − rowsum(dP ⊙ P))

The subtracted term is one number per row: moving all scores of a row together changes nothing.]],
            zh = [[
dP = dO·Vᵀ。P 的每一行是一个 softmax，其雅可比矩阵是 diag(p) − p·pᵀ；作用在 dP 的一行上就是

    dS = P ⊙ (dP − rowsum(dP ⊙ P))

减去的那一项每行只有一个数：一行所有分数一起移动不改变任何东西。]],
        },
        code = [[
dP = dO:matmul(v:transpose(1, 2))
dS = p * (dP - (dP * p):sum(2, true))
show(dS, {title = tr{en = "by hand: dS", zh = "手算：dS"}})
print(tr{en = "equal to mha.softmax_backward:",
         zh = "与 mha.softmax_backward 相同："},
      (dS - mha.softmax_backward(dP, p, 2)):abs():max():item() < 1e-6)
print(tr{en = "each row of dS sums to 0:", zh = "dS 每行之和为 0："},
      dS:sum(2):abs():max():item() < 1e-6)]],
    },

    step{
        title = {en = "dQ and dK", zh = "dQ 与 dK"},
        text = {
            en = [[
S = Q·Kᵀ/√d_k is a product again: dQ = dS·K/√d_k and dK = dSᵀ·Q/√d_k. Every gradient of the
head is now accounted for, and equals what autograd recorded and replayed.]],
            zh = [[
S = Q·Kᵀ/√d_k 又是乘积：dQ = dS·K/√d_k，dK = dSᵀ·Q/√d_k。这个头的所有梯度都算出来了，
并且与自动求导记录并回放的结果相同。]],
        },
        code = [[
dQ = dS:matmul(k) / math.sqrt(3)
dK = dS:transpose(1, 2):matmul(q) / math.sqrt(3)
print(tr{en = "max |dQ - autograd| < 1e-5:",
         zh = "max |dQ - 自动求导| < 1e-5："},
      (dQ - Q:grad()):abs():max():item() < 1e-5)
print(tr{en = "max |dK - autograd| < 1e-5:",
         zh = "max |dK - 自动求导| < 1e-5："},
      (dK - K:grad()):abs():max():item() < 1e-5)]],
    },

    step{
        title = {en = "What the fused backward keeps", zh = "融合的反向传播保存什么"},
        text = {
            en = [[
The fused forward never stores P (L×S floats). It keeps one number per row, the log-sum-exp
lse = log Σ_j exp(S_ij); backward recomputes S tile by tile and gets P = exp(S − lse) exactly. And
rowsum(dP ⊙ P) = rowsum(dO ⊙ O), so it needs O and dO, not P, for the subtracted term.]],
            zh = [[
融合的前向计算从不保存 P（L×S 个浮点数）。它每行只保存一个数，即 log-sum-exp：
lse = log Σ_j exp(S_ij)；反向时逐块重算 S，就能精确得到 P = exp(S − lse)。而且
rowsum(dP ⊙ P) = rowsum(dO ⊙ O)，所以减去的那一项只需要 O 和 dO，不需要 P。]],
        },
        code = [[
s = S:detach()
lse = s:exp():sum(2, true):log()   -- tr{en = "(4, 1): one per row", zh = "(4, 1)：每行一个"}
print(tr{en = "exp(S - lse) = P:", zh = "exp(S - lse) = P："},
      (mha.exp(s - lse) - p):abs():max():item() < 1e-6)
gap = (dP * p):sum(2) - (dO * O:detach()):sum(2)
print(tr{en = "rowsum(dP*P) = rowsum(dO*O):",
         zh = "rowsum(dP*P) = rowsum(dO*O)："},
      gap:abs():max():item() < 1e-5)]],
    },

    exercise{
        title = {en = "dV once more", zh = "再算一次 dV"},
        prompt = {
            en = [[
For a new upstream gradient G2 = mha.ones(4, 3), what is dV? Use p (the weights). answer(tensor)]],
            zh = [[
若上游梯度换成 G2 = mha.ones(4, 3)，dV 是多少？用 p（权重）。answer(张量)]],
        },
        solution = [[p:transpose(1, 2):matmul(mha.ones(4, 3))]],
        mistakes = {
            mistake{wrong = [[p:matmul(mha.ones(4, 3))]],
                hint = {en = "O = P·V, so V's gradient is Pᵀ·dO: transpose P first",
                        zh = "O = P·V，所以 V 的梯度是 Pᵀ·dO：先转置 P"}},
        },
    },
}
