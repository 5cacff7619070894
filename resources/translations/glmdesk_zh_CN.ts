<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>AboutDialog</name>
    <message>
        <source>About glmdesk</source>
        <extracomment>The Apache License 2.0 text shipped in ``resources/licenses`` (glmdesk&apos;s own licence and the embedded model&apos;s; its redistribution needs the text alongside).</extracomment>
        <translation>关于 glmdesk</translation>
    </message>
    <message>
        <source>A desktop chat app for ChatGLM-family models running on your own machine. Licensed under the Apache License 2.0.</source>
        <translation>在你自己的电脑上运行 ChatGLM 系列模型的桌面聊天应用。采用 Apache License 2.0 许可。</translation>
    </message>
    <message>
        <source>Embedded model</source>
        <translation>内置模型</translation>
    </message>
    <message>
        <source>Models you open keep their own licences: read the licence in the model&apos;s folder (ChatGLM and GLM-4 weights come with THUDM&apos;s model licence).</source>
        <translation>你打开的模型遵循其各自的许可：请阅读模型文件夹中的许可文件（ChatGLM 与 GLM-4 的权重附带 THUDM 的模型许可）。</translation>
    </message>
    <message>
        <source>Apache License 2.0 (glmdesk and the embedded model):</source>
        <translation>Apache License 2.0（glmdesk 与内置模型）：</translation>
    </message>
</context>
<context>
    <name>AnswerNotes</name>
    <message>
        <source>max tokens reached</source>
        <translation>已达到最大 token 数</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>stopped: repeating itself</source>
        <translation>已停止：内容不断重复</translation>
    </message>
    <message>
        <source>{tokens} tokens, {rate} tokens/s, first thinking token after {ttft} s, first answer token after {answer} s</source>
        <translation>{tokens} 个 token，{rate} token/秒，首个思考 token 延迟 {ttft} 秒，首个回答 token 延迟 {answer} 秒</translation>
    </message>
    <message>
        <source>{tokens} tokens, {rate} tokens/s, first token after {ttft} s</source>
        <translation>{tokens} 个 token，{rate} token/秒，首 token 延迟 {ttft} 秒</translation>
    </message>
    <message>
        <source>{stats} ({reason})</source>
        <translation>{stats}（{reason}）</translation>
    </message>
    <message>
        <source>Stopped: the answer kept repeating the same few tokens over and over. Try Regenerate, a higher temperature or a repetition penalty.</source>
        <translation>已停止：回答一直在反复重复同样的几个 token。可以试试重新生成、调高温度或设置重复惩罚。</translation>
    </message>
    <message>
        <source>Only {tokens} tokens are left in the context window for this answer (max new tokens is {max}).</source>
        <translation>上下文窗口只剩 {tokens} 个 token 可用于此回答（最大新 token 数为 {max}）。</translation>
    </message>
    <message>
        <source>Left out of the model&apos;s context: the conversation is longer than the context window.</source>
        <translation>未放入模型上下文：对话长度超出了上下文窗口。</translation>
    </message>
    <message>
        <source>{count} earlier messages were left out of the context.</source>
        <translation>有 {count} 条较早的消息未放入上下文。</translation>
    </message>
</context>
<context>
    <name>AnswerView</name>
    <message>
        <source>Stopped before the first token.</source>
        <translation>在生成第一个 token 之前已停止。</translation>
    </message>
</context>
<context>
    <name>ApprovalCard</name>
    <message>
        <source>Run this code?</source>
        <translation>运行这段代码？</translation>
    </message>
    <message>
        <source>Run {tool} of the MCP server {server}?</source>
        <translation>运行 MCP 服务器 {server} 的 {tool}？</translation>
    </message>
    <message>
        <source>The server marks this tool read-only.</source>
        <translation>服务器将此工具标记为只读。</translation>
    </message>
    <message>
        <source>Reason for denying (optional; the model reads it)</source>
        <translation>拒绝原因（可选；模型会读到）</translation>
    </message>
    <message>
        <source>Allow once</source>
        <translation>允许一次</translation>
    </message>
    <message>
        <source>Always allow this tool</source>
        <translation>始终允许此工具</translation>
    </message>
    <message>
        <source>Deny</source>
        <translation>拒绝</translation>
    </message>
    <message>
        <source>Waiting for you</source>
        <translation>等待你的决定</translation>
    </message>
    <message>
        <source>Allowed</source>
        <translation>已允许</translation>
    </message>
    <message>
        <source>Denied</source>
        <translation>已拒绝</translation>
    </message>
    <message>
        <source>Stopped: not run</source>
        <translation>已停止：未运行</translation>
    </message>
</context>
<context>
    <name>AttachmentTray</name>
    <message>
        <source>Remove this image</source>
        <translation>移除这张图片</translation>
    </message>
</context>
<context>
    <name>BranchActions</name>
    <message>
        <source>{tokens} tokens</source>
        <translation>{tokens} 个 token</translation>
    </message>
    <message>
        <source>{rate} tokens/s</source>
        <translation>{rate} token/秒</translation>
    </message>
    <message>
        <source>TTFT {ttft} s thinking, {answer} s answer</source>
        <translation>首 token 延迟：思考 {ttft} 秒，回答 {answer} 秒</translation>
    </message>
    <message>
        <source>TTFT {ttft} s</source>
        <translation>首 token 延迟 {ttft} 秒</translation>
    </message>
    <message>
        <source>temperature {value}</source>
        <translation>温度 {value}</translation>
    </message>
    <message>
        <source>max {tokens} new tokens</source>
        <translation>最大新 token 数 {tokens}</translation>
    </message>
    <message>
        <source>cut at the token limit</source>
        <translation>达到 token 上限而截断</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Message copied as Markdown.</source>
        <translation>已复制为 Markdown。</translation>
    </message>
    <message>
        <source>Message copied as plain text.</source>
        <translation>已复制为纯文本。</translation>
    </message>
</context>
<context>
    <name>ChatFormatBox</name>
    <message>
        <source>How the model is prompted and its reasoning and tool calls read. Automatic reads it from the model&apos;s chat template, whatever its config says.</source>
        <translation>模型如何被提示，以及如何读取其推理和工具调用。“自动”从模型的聊天模板中读取，不论其配置如何声明。</translation>
    </message>
    <message>
        <source>The model&apos;s own chat template</source>
        <translation>模型自带的聊天模板</translation>
    </message>
    <message>
        <source>Template...</source>
        <translation>模板…</translation>
    </message>
    <message>
        <source>A chat template file (.jinja or tokenizer_config.json) to use instead</source>
        <translation>改用的聊天模板文件（.jinja 或 tokenizer_config.json）</translation>
    </message>
    <message>
        <source>Automatic (from the chat template)</source>
        <translation>自动（根据聊天模板）</translation>
    </message>
    <message>
        <source>GLM-4.5/4.6/4.7: reasoning, XML tool calls</source>
        <translation>GLM-4.5/4.6/4.7：推理，XML 工具调用</translation>
    </message>
    <message>
        <source>GLM-Z1: reasoning, no tool calls</source>
        <translation>GLM-Z1：推理，无工具调用</translation>
    </message>
    <message>
        <source>The chat template only</source>
        <translation>仅聊天模板</translation>
    </message>
    <message>
        <source>The format is read from the chat template when the model loads.</source>
        <translation>加载模型时将从聊天模板中读取格式。</translation>
    </message>
    <message>
        <source>No chat template found: the model&apos;s family decides the format.</source>
        <translation>未找到聊天模板：由模型系列决定格式。</translation>
    </message>
    <message>
        <source>Not a GLM chat template: prompted by it as it is.</source>
        <translation>不是 GLM 聊天模板：按模板原样提示。</translation>
    </message>
    <message>
        <source>it writes tool calls with &lt;arg_key&gt; and &lt;arg_value&gt;</source>
        <translation>它用 &lt;arg_key&gt; 和 &lt;arg_value&gt; 写工具调用</translation>
    </message>
    <message>
        <source>it writes reasoning in &lt;think&gt; and no XML tool calls</source>
        <translation>它在 &lt;think&gt; 中写推理，且没有 XML 工具调用</translation>
    </message>
    <message>
        <source>it writes no reasoning markers and no XML tool calls</source>
        <translation>它既没有推理标记，也没有 XML 工具调用</translation>
    </message>
    <message>
        <source>Automatic reads the chat template as {format}: {why}.</source>
        <translation>“自动”将聊天模板识别为 {format}：{why}。</translation>
    </message>
    <message>
        <source>Choose a chat template</source>
        <translation>选择聊天模板</translation>
    </message>
    <message>
        <source>Chat templates (*.jinja *.json)</source>
        <translation>聊天模板 (*.jinja *.json)</translation>
    </message>
</context>
<context>
    <name>ConversationListModel</name>
    <message>
        <source>Untitled</source>
        <translation>未命名对话</translation>
    </message>
    <message>
        <source>no model</source>
        <translation>无模型</translation>
    </message>
    <message>
        <source>{title}
Updated {when} · {model}</source>
        <translation>{title}
更新于 {when} · {model}</translation>
    </message>
</context>
<context>
    <name>CrashNotice</name>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>glmdesk closed unexpectedly while {engine} was answering with {model}: the engine crashed ({signal}). Crash log: {log}</source>
        <translation>{engine} 使用 {model} 回答时 glmdesk 意外关闭：引擎崩溃（{signal}）。崩溃日志：{log}</translation>
    </message>
    <message>
        <source>glmdesk stopped while {engine} was answering with {model}: it was ended from outside or the computer lost power (no crash log was written).</source>
        <translation>{engine} 使用 {model} 回答时 glmdesk 停止了：它被外部结束，或电脑断电（没有写入崩溃日志）。</translation>
    </message>
    <message>
        <source>glmdesk will not choose {engine} by itself until you pick it in Open model.</source>
        <translation>在你于“打开模型”中选择 {engine} 之前，glmdesk 不会再自动选用它。</translation>
    </message>
    <message>
        <source>The engine stopped while answering. Regenerate (Ctrl+R) writes the answer again.</source>
        <translation>引擎在回答时停止了。“重新生成”（Ctrl+R）会重新写出回答。</translation>
    </message>
    <message>
        <source>Wait until the model has loaded, then press Regenerate again.</source>
        <translation>请等模型加载完成后再次点击“重新生成”。</translation>
    </message>
</context>
<context>
    <name>DocumentSending</name>
    <message>
        <source>The message could not be sent now; it is still in the input box.</source>
        <translation>消息现在无法发送，它仍在输入框中。</translation>
    </message>
    <message>
        <source>The documents could not be used ({detail}); a question goes without them.</source>
        <translation>无法使用文档（{detail}）；问题将不带文档发送。</translation>
    </message>
</context>
<context>
    <name>DocumentWords</name>
    <message>
        <source>{name} does not exist (or cannot be seen by glmdesk).</source>
        <translation>{name} 不存在（或 glmdesk 无法访问）。</translation>
    </message>
    <message>
        <source>{name} disappeared while it was being read; what was indexed before is kept.</source>
        <translation>{name} 在读取时消失了；之前已索引的内容都保留。</translation>
    </message>
    <message>
        <source>{name} cannot be opened: {detail}.</source>
        <translation>无法打开 {name}：{detail}。</translation>
    </message>
    <message>
        <source>{name} is {detail}; glmdesk reads documents up to 256 MB.</source>
        <translation>{name} 大小为 {detail}；glmdesk 只读取 256 MB 以内的文档。</translation>
    </message>
    <message>
        <source>{name} is empty: there is no text in it.</source>
        <translation>{name} 是空的：里面没有文字。</translation>
    </message>
    <message>
        <source>{name} is not a document glmdesk can read (text, Markdown, code, PDF, DOCX or HTML): it holds binary data.</source>
        <translation>{name} 不是 glmdesk 能读取的文档（文本、Markdown、代码、PDF、DOCX 或 HTML）：它包含二进制数据。</translation>
    </message>
    <message>
        <source>{name} is protected by a password: save a copy without one and add that.</source>
        <translation>{name} 受密码保护：请另存一份不带密码的副本再添加。</translation>
    </message>
    <message>
        <source>{name} is damaged and cannot be read ({detail}).</source>
        <translation>{name} 已损坏，无法读取（{detail}）。</translation>
    </message>
    <message>
        <source>{name} has only scanned pages (images, no text): they need text recognition before they can be searched.</source>
        <translation>{name} 只有扫描页（图像，没有文字）：需要先做文字识别才能检索。</translation>
    </message>
    <message>
        <source>The disk is full: {name} was not indexed. What was indexed before is kept.</source>
        <translation>磁盘已满：{name} 未被索引。之前已索引的内容都保留。</translation>
    </message>
    <message>
        <source>Indexing stopped before {name}; what was indexed before is kept.</source>
        <translation>索引在 {name} 之前停止；之前已索引的内容都保留。</translation>
    </message>
    <message>
        <source>{done} of {total} files, {pages} pages</source>
        <translation>{done}/{total} 个文件，{pages} 页</translation>
    </message>
    <message>
        <source>, about {seconds} s left</source>
        <translation>，约剩 {seconds} 秒</translation>
    </message>
    <message>
        <source>{name}, whole</source>
        <translation>{name}，整篇</translation>
    </message>
    <message>
        <source>{name}, page {page}, line {line}</source>
        <translation>{name}，第 {page} 页，第 {line} 行</translation>
    </message>
    <message>
        <source>{name}, line {line}</source>
        <translation>{name}，第 {line} 行</translation>
    </message>
    <message>
        <source>changed since this answer</source>
        <translation>此回答之后已更改</translation>
    </message>
    <message>
        <source>file no longer on disk</source>
        <translation>文件已不在磁盘上</translation>
    </message>
    <message>
        <source>No passage matched the question&apos;s words; the documents&apos; first passages were given.</source>
        <translation>没有段落与问题的词语匹配；已给出文档开头的段落。</translation>
    </message>
    <message>
        <source>No passage fits the room left ({tokens} tokens): raise the budget or shorten the conversation.</source>
        <translation>剩余空间（{tokens} 个 token）放不下任何段落：请提高预算或缩短对话。</translation>
    </message>
    <message>
        <source>{name}: pages {pages} are scanned images with no text; they are not searched.</source>
        <translation>{name}：第 {pages} 页是没有文字的扫描图像，不会被检索。</translation>
    </message>
</context>
<context>
    <name>DocumentsPanel</name>
    <message>
        <source>Documents…</source>
        <extracomment>The file dialog&apos;s filter (the suffixes :mod:`glmdesk.documents.indexing` reads).</extracomment>
        <translation>文档…</translation>
    </message>
    <message>
        <source>Attach documents (text, Markdown, code, PDF, DOCX, HTML), or paste or drop them</source>
        <translation>附加文档（文本、Markdown、代码、PDF、DOCX、HTML），也可以粘贴或拖放</translation>
    </message>
    <message>
        <source>Library</source>
        <translation>文档库</translation>
    </message>
    <message>
        <source>Passages up to </source>
        <translation>段落最多 </translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> 个 token</translation>
    </message>
    <message>
        <source>Documents that fit the context go in whole; otherwise the passages that best match the question, up to this many tokens. Search is by keywords (BM25): no local embedding model is installed.</source>
        <translation>放得进上下文的文档会整篇给模型；否则给出与问题最相关的段落，最多这么多 token。检索按关键词（BM25）进行：本机没有安装嵌入模型。</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Attach documents</source>
        <translation>附加文档</translation>
    </message>
    <message>
        <source>Documents ({patterns});;All files (*)</source>
        <translation>文档 ({patterns});;所有文件 (*)</translation>
    </message>
    <message>
        <source>Add a folder to the library</source>
        <translation>把文件夹加入文档库</translation>
    </message>
    <message>
        <source>, {n} pages</source>
        <translation>，{n} 页</translation>
    </message>
    <message>
        <source>{path}
Click to take it off this chat.</source>
        <translation>{path}
点击从本对话中移除。</translation>
    </message>
    <message>
        <source>{name}/ ×</source>
        <translation>{name}/ ×</translation>
    </message>
    <message>
        <source>{path}
Click to turn this library folder off for this chat.</source>
        <translation>{path}
点击在本对话中关闭此文档库文件夹。</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <source>Index the library again</source>
        <translation>重新索引文档库</translation>
    </message>
    <message>
        <source>Remove from the library</source>
        <translation>从文档库移除</translation>
    </message>
    <message>
        <source>Indexing was cancelled; what was indexed before is kept.</source>
        <translation>索引已取消；之前已索引的内容都保留。</translation>
    </message>
</context>
<context>
    <name>DownloadList</name>
    <message>
        <source>Not enough disk space: {need} more is needed and {folder} has {free} free. Free some space or choose another models folder.</source>
        <translation>磁盘空间不足：还需要 {need}，而 {folder} 只有 {free} 可用。请清理空间或选择其他模型文件夹。</translation>
    </message>
    <message>
        <source>{file} arrived damaged (its hash is not the hub&apos;s) and was deleted; Retry fetches it anew.</source>
        <translation>{file} 下载后已损坏（哈希与模型库不符），已删除；点“重试”重新下载。</translation>
    </message>
    <message>
        <source>This repository needs permission (the hub answered {status}): open {page}, sign in and accept its terms, then set a token with read access under Hub token.</source>
        <translation>此仓库需要授权（模型库返回 {status}）：请打开 {page}，登录并接受其条款，然后在“模型库令牌”中设置一个只读令牌。</translation>
    </message>
    <message>
        <source>The hub has no repository {repo}.</source>
        <translation>模型库中没有仓库 {repo}。</translation>
    </message>
    <message>
        <source>{repo} has the quantizations {quants}; {quant} is not among them.</source>
        <translation>{repo} 提供的量化有 {quants}；其中没有 {quant}。</translation>
    </message>
    <message>
        <source>The connection was lost; what was fetched is kept: Retry resumes from there.</source>
        <translation>连接已断开；已下载的部分会保留，点“重试”从断点继续。</translation>
    </message>
    <message>
        <source>Another glmdesk is downloading this model already.</source>
        <translation>另一个 glmdesk 已在下载这个模型。</translation>
    </message>
    <message>
        <source>The hub is not reachable ({detail}); Retry when you are online.</source>
        <translation>无法连接模型库（{detail}）；联网后请点“重试”。</translation>
    </message>
</context>
<context>
    <name>DownloadRow</name>
    <message>
        <source>Waiting...</source>
        <translation>等待中…</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <source>{done} of {total}</source>
        <translation>{done} / {total}</translation>
    </message>
    <message>
        <source>Resuming: {sizes} already here.</source>
        <translation>断点续传：已有 {sizes}。</translation>
    </message>
    <message>
        <source>{sizes}: checking {file} against the hub&apos;s hash...</source>
        <translation>{sizes}：正在用模型库的哈希校验 {file}…</translation>
    </message>
    <message>
        <source>{sizes}: {file} taken from the hub&apos;s cache.</source>
        <translation>{sizes}：{file} 取自 Hugging Face 缓存。</translation>
    </message>
    <message>
        <source>{rate}/s</source>
        <translation>{rate}/秒</translation>
    </message>
    <message>
        <source>{sizes}, {speed}, {eta} left (file {index} of {count})</source>
        <translation>{sizes}，{speed}，剩余 {eta}（第 {index} 个文件，共 {count} 个）</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Paused: what was fetched is kept; Resume goes on from there.</source>
        <translation>已暂停：已下载的部分会保留，点“继续”从断点接着下载。</translation>
    </message>
    <message>
        <source>Downloaded and checked: {folder}</source>
        <translation>已下载并校验：{folder}</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
</context>
<context>
    <name>EditDialog</name>
    <message>
        <source>Edit message</source>
        <translation>编辑消息</translation>
    </message>
    <message>
        <source>Sending makes a new version of this message; the earlier one and its answers stay, one click away.</source>
        <translation>发送后将生成此消息的新版本；原来的版本及其回答会保留，点一下即可切换回去。</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
</context>
<context>
    <name>EffortChoice</name>
    <message>
        <source>Reasoning effort</source>
        <extracomment>The template value this choice sets.</extracomment>
        <translation>推理强度</translation>
    </message>
    <message>
        <source>Load a model first.</source>
        <translation>请先加载模型。</translation>
    </message>
    <message>
        <source>Model default</source>
        <translation>模型默认</translation>
    </message>
    <message>
        <source>How hard the model thinks before it answers, as its chat template offers. From the next answer.</source>
        <translation>模型回答前思考的深度，由其聊天模板提供。从下一次回答起生效。</translation>
    </message>
</context>
<context>
    <name>EngineUpgrade</name>
    <message>
        <source>Engine: the server at {url}</source>
        <translation>引擎：服务器 {url}</translation>
    </message>
    <message>
        <source>Engine: llama.cpp, the fastest here for a GGUF file</source>
        <translation>引擎：llama.cpp，本机运行 GGUF 文件最快的引擎</translation>
    </message>
    <message>
        <source>Engine: llama.cpp, chosen in Open model</source>
        <translation>引擎：llama.cpp，在“打开模型”中选择</translation>
    </message>
    <message>
        <source>Engine: {engine}</source>
        <translation>引擎：{engine}</translation>
    </message>
    <message>
        <source>transformers, {quantization}</source>
        <translation>transformers，{quantization}</translation>
    </message>
    <message>
        <source>transformers, {dtype}</source>
        <translation>transformers，{dtype}</translation>
    </message>
    <message>
        <source>chosen in Open model</source>
        <translation>在“打开模型”中选择</translation>
    </message>
    <message>
        <source>the engine for this model</source>
        <translation>此模型使用的引擎</translation>
    </message>
    <message>
        <source>Engine: {how}, {reason}</source>
        <translation>引擎：{how}，{reason}</translation>
    </message>
    <message>
        <source>Engine: {how} until llama.cpp is built ({stage})</source>
        <translation>引擎：{how}，直到 llama.cpp 构建完成（{stage}）</translation>
    </message>
    <message>
        <source>Engine: {how}; llama.cpp is built and answers from the next message</source>
        <translation>引擎：{how}；llama.cpp 已构建完成，将从下一条消息起回答</translation>
    </message>
    <message>
        <source>Engine: {how}. {why}</source>
        <translation>引擎：{how}。{why}</translation>
    </message>
    <message>
        <source>Engine: {how}</source>
        <translation>引擎：{how}</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>正在开始</translation>
    </message>
    <message>
        <source>waiting for another glmdesk that builds it</source>
        <translation>正在等待另一个正在构建它的 glmdesk</translation>
    </message>
    <message>
        <source>downloading</source>
        <translation>下载中</translation>
    </message>
    <message>
        <source>compiling</source>
        <translation>编译中</translation>
    </message>
    <message>
        <source>testing</source>
        <translation>正在测试</translation>
    </message>
    <message>
        <source>installing</source>
        <translation>安装中</translation>
    </message>
    <message>
        <source>stage {index}/{total}: {stage}</source>
        <translation>第 {index}/{total} 步：{stage}</translation>
    </message>
</context>
<context>
    <name>ErrorMessages</name>
    <message>
        <source>The model {path} was not found.</source>
        <translation>找不到模型 {path}。</translation>
    </message>
    <message>
        <source>{path} is not a chat model: choose a model folder or a .gguf file.</source>
        <translation>{path} 不是对话模型：请选择模型文件夹或 .gguf 文件。</translation>
    </message>
    <message>
        <source>The weight file {file} in {path} is damaged or incomplete; download it again.</source>
        <translation>{path} 中的权重文件 {file} 已损坏或不完整，请重新下载。</translation>
    </message>
    <message>
        <source>The model {model} could not be downloaded: there is no connection, or no such model on the hub.</source>
        <translation>无法下载模型 {model}：没有网络连接，或 Hub 上没有这个模型。</translation>
    </message>
    <message>
        <source>{path} cannot be used: {reason}</source>
        <translation>无法使用 {path}：{reason}</translation>
    </message>
    <message>
        <source>{path} needs its own Python code to run; allow it for this folder in Open model only if you trust where it came from.</source>
        <translation>{path} 需要运行其自带的 Python 代码；仅当你信任它的来源时，才在“打开模型”中为该文件夹允许运行。</translation>
    </message>
    <message>
        <source>The server keeps its own KV cache: its strategy is chosen when the server is started.</source>
        <translation>服务器自行管理 KV 缓存：其策略在启动服务器时选择。</translation>
    </message>
    <message>
        <source>The server loads its model with its own precision and quantization, chosen when the server is started.</source>
        <translation>服务器以自己的精度和量化加载模型，二者在启动服务器时选择。</translation>
    </message>
    <message>
        <source>{quantization} on a GPU needs torchao (pip install &apos;glmdesk[cuda-quant]&apos;); choose the CPU device, or 8-bit or 4-bit NF4.</source>
        <translation>{quantization} 在 GPU 上需要 torchao（pip install &apos;glmdesk[cuda-quant]&apos;）；请选择 CPU 设备，或 8 位或 4 位 NF4。</translation>
    </message>
    <message>
        <source>{quantization} quantization is unavailable here: {reason}</source>
        <translation>当前无法使用 {quantization} 量化：{reason}</translation>
    </message>
    <message>
        <source>{precision} is unavailable here: {reason}</source>
        <translation>当前无法使用 {precision}：{reason}</translation>
    </message>
    <message>
        <source>There is not enough memory on {device} to load this model; try 4-bit quantization or a smaller model.</source>
        <translation>{device} 内存不足，无法加载此模型；请尝试 4 位量化或更小的模型。</translation>
    </message>
    <message>
        <source>{device} ran out of memory while answering. The answer so far is kept. Try a new chat (shorter context), the sliding-window KV cache, or 4-bit quantization.</source>
        <translation>{device} 在生成回答时内存不足，已生成的内容已保留。请尝试新建对话（缩短上下文）、改用滑动窗口 KV 缓存，或使用 4 位量化。</translation>
    </message>
    <message>
        <source>glmdesk gave back {freed_mib} MiB of idle KV buffers first.</source>
        <translation>glmdesk 已先释放 {freed_mib} MiB 闲置的 KV 缓冲区。</translation>
    </message>
    <message>
        <source>Your message is {tokens} tokens long, but only {limit} tokens fit in this model&apos;s context window. Shorten it or send it in parts.</source>
        <translation>你的消息长 {tokens} 个 token，但该模型的上下文窗口只能容纳 {limit} 个 token。请缩短消息或分段发送。</translation>
    </message>
    <message>
        <source>The system prompt is {tokens} tokens long, but only {limit} tokens fit in this model&apos;s context window with room for a reply. Shorten the system prompt in the sidebar.</source>
        <translation>系统提示词长 {tokens} 个 token，但在为回复留出空间后，此模型的上下文窗口只能容纳 {limit} 个 token。请在侧边栏中缩短系统提示词。</translation>
    </message>
    <message>
        <source>The setting {name} cannot be {value}: {reason}</source>
        <translation>设置项 {name} 不能为 {value}：{reason}</translation>
    </message>
    <message>
        <source>Loading was cancelled.</source>
        <translation>已取消加载。</translation>
    </message>
    <message>
        <source>The answer failed: {detail}</source>
        <translation>生成回答失败：{detail}</translation>
    </message>
    <message>
        <source>The model could not be loaded: {detail}</source>
        <translation>无法加载模型：{detail}</translation>
    </message>
    <message>
        <source>{option} cannot be used on this computer.</source>
        <translation>此电脑无法使用 {option}。</translation>
    </message>
    <message>
        <source>The model wrote a tool call that was not run, so it is shown as text ({reason}).</source>
        <translation>模型写出的工具调用未被执行，已作为文本显示（{reason}）。</translation>
    </message>
    <message>
        <source>The answer was ended: the model asked for more tool calls than this message allows.</source>
        <translation>回答已结束：模型请求的工具调用次数超过了本条消息允许的上限。</translation>
    </message>
    <message>
        <source>The Python interpreter could not run: {detail}</source>
        <translation>Python 解释器无法运行：{detail}</translation>
    </message>
    <message>
        <source>{file} in {path} is not a GGUF file: a GGUF file starts with the bytes &quot;GGUF&quot;, this one starts with &quot;{head}&quot;. Choose the .gguf file itself.</source>
        <translation>{path} 中的 {file} 不是 GGUF 文件：GGUF 文件以字节“GGUF”开头，而它以“{head}”开头。请选择 .gguf 文件本身。</translation>
    </message>
    <message>
        <source>{file} holds tensors of type {tensor_types}, which the {engine} engine cannot dequantize; open it with the llama.cpp engine, or open the model&apos;s original folder.</source>
        <translation>{file} 中含有 {tensor_types} 类型的张量，{engine} 引擎无法对其反量化；请用 llama.cpp 引擎打开，或打开该模型的原始文件夹。</translation>
    </message>
    <message>
        <source>{file} holds tensors of type {tensor_types}, which neither the {engine} engine nor the llama.cpp engine can run; open the model&apos;s original folder, or a GGUF file quantized to a common type such as Q8_0 or Q4_K_M.</source>
        <translation>{file} 中含有 {tensor_types} 类型的张量，{engine} 引擎和 llama.cpp 引擎都无法运行；请打开该模型的原始文件夹，或改用常见量化类型（如 Q8_0 或 Q4_K_M）的 GGUF 文件。</translation>
    </message>
    <message>
        <source>{file} holds a model of architecture {architecture}, which the {engine} engine cannot run from a GGUF file; open it with the llama.cpp engine, or open the model&apos;s original folder.</source>
        <translation>{file} 中的模型架构是 {architecture}，{engine} 引擎无法从 GGUF 文件运行它；请用 llama.cpp 引擎打开，或打开该模型的原始文件夹。</translation>
    </message>
    <message>
        <source>{file} in {path} is a Git LFS pointer, not the file itself (the folder was cloned without git-lfs): run git lfs pull in that folder, or download the file again.</source>
        <translation>{path} 中的 {file} 是 Git LFS 指针文件，而不是文件本身（该文件夹克隆时没有使用 git-lfs）：请在该文件夹中运行 git lfs pull，或重新下载该文件。</translation>
    </message>
    <message>
        <source>llama.cpp could not be built: {detail}</source>
        <translation>无法构建 llama.cpp：{detail}</translation>
    </message>
    <message>
        <source>Building llama.cpp was cancelled.</source>
        <translation>已取消构建 llama.cpp。</translation>
    </message>
    <message>
        <source>llama.cpp cannot be built here: no C/C++ compiler was found (install gcc and g++, or clang).</source>
        <translation>无法在此构建 llama.cpp：未找到 C/C++ 编译器（请安装 gcc 和 g++，或 clang）。</translation>
    </message>
    <message>
        <source>The packaged app cannot build llama.cpp (it has no Python build tools).</source>
        <translation>打包版应用无法构建 llama.cpp（其中没有 Python 构建工具）。</translation>
    </message>
    <message>
        <source>Building llama.cpp is turned off (GLMDESK_LLAMACPP_BUILD=0).</source>
        <translation>已关闭 llama.cpp 的构建（GLMDESK_LLAMACPP_BUILD=0）。</translation>
    </message>
    <message>
        <source>llama.cpp cannot be built on this computer.</source>
        <translation>无法在此电脑上构建 llama.cpp。</translation>
    </message>
    <message>
        <source>llama.cpp ({build}) crashed ({signal}) on its test answer, so it is not used and transformers answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp</source>
        <translation>llama.cpp（{build}）在测试回答时崩溃（{signal}），因此不使用它，改由 transformers 回答。可继续使用 transformers，或重新构建 llama.cpp：glmdesk build-llamacpp</translation>
    </message>
    <message>
        <source>llama.cpp ({build}) answered its test prompt wrongly, so it is not used and transformers answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp</source>
        <translation>llama.cpp（{build}）对测试提示的回答不正确，因此不使用它，改由 transformers 回答。可继续使用 transformers，或重新构建 llama.cpp：glmdesk build-llamacpp</translation>
    </message>
    <message>
        <source>llama.cpp ({build}) could not answer its test prompt, so it is not used and transformers answers. Keep transformers, or rebuild llama.cpp: glmdesk build-llamacpp</source>
        <translation>llama.cpp（{build}）无法回答测试提示，因此不使用它，改由 transformers 回答。可继续使用 transformers，或重新构建 llama.cpp：glmdesk build-llamacpp</translation>
    </message>
    <message>
        <source>The image {name} cannot be used: {reason}.</source>
        <translation>无法使用图片 {name}：{reason}。</translation>
    </message>
    <message>
        <source>{model} is open with the llama.cpp engine, which cannot read images here: open a GLM vision model (GLM-4.1V, GLM-4.6V) with the transformers engine, or on a server.</source>
        <translation>{model} 是用 llama.cpp 引擎打开的，在此无法读取图片：请用 transformers 引擎或在服务器上打开 GLM 视觉模型（GLM-4.1V、GLM-4.6V）。</translation>
    </message>
    <message>
        <source>{model} does not read images: open a GLM vision model (GLM-4.1V, GLM-4.6V) to ask about a picture.</source>
        <translation>{model} 无法读取图片：要询问图片内容，请打开 GLM 视觉模型（GLM-4.1V、GLM-4.6V）。</translation>
    </message>
    <message>
        <source>The disk holding the chat history is full ({path}). The conversation stays in the window and is saved as soon as there is space again.</source>
        <translation>保存聊天记录的磁盘已满（{path}）。对话仍显示在窗口中，磁盘有空间后会自动保存。</translation>
    </message>
    <message>
        <source>The chat history file {path} is damaged, so nothing more can be saved in it. Restart glmdesk: it keeps the damaged file under a new name and starts a new history.</source>
        <translation>聊天记录文件 {path} 已损坏，无法再保存内容。请重新启动 glmdesk：损坏的文件会以新名称保留，并开始新的聊天记录。</translation>
    </message>
    <message>
        <source>The chat history ({path}) could not be saved or read: {detail}</source>
        <translation>无法保存或读取聊天记录（{path}）：{detail}</translation>
    </message>
    <message>
        <source>“{title}” was imported. Its custom functions have problems, so none is offered until you fix them in the Tools section: {problems}</source>
        <translation>已导入“{title}”。其自定义函数有问题，在“工具”部分修正之前不会提供任何函数：{problems}</translation>
    </message>
    <message>
        <source>“{title}” was imported without its Tools section, which could not be used: {problems}</source>
        <translation>已导入“{title}”，但其“工具”设置无法使用，未一并导入：{problems}</translation>
    </message>
    <message>
        <source>Nothing answers at {url}: the connection was refused. Is the server running, on that port?</source>
        <translation>{url} 无响应：连接被拒绝。服务器是否已启动，端口是否正确？</translation>
    </message>
    <message>
        <source>The server name in {url} could not be found (DNS). Check the address.</source>
        <translation>找不到 {url} 中的服务器名称（DNS）。请检查地址。</translation>
    </message>
    <message>
        <source>A secure (TLS) connection to {url} failed: {detail}. Check https:// versus http:// and the certificate.</source>
        <translation>与 {url} 的安全（TLS）连接失败：{detail}。请检查应使用 https:// 还是 http://，以及证书。</translation>
    </message>
    <message>
        <source>The server at {url} did not answer in time.</source>
        <translation>{url} 的服务器未能及时响应。</translation>
    </message>
    <message>
        <source>The server at {url} could not be reached: {detail}.</source>
        <translation>无法连接 {url} 的服务器：{detail}。</translation>
    </message>
    <message>
        <source>The server at {url} refused the API key. Check the key in Open model.</source>
        <translation>{url} 的服务器拒绝了 API 密钥。请在“打开模型”中检查密钥。</translation>
    </message>
    <message>
        <source>The server at {url} has no model {model}; choose one it lists.</source>
        <translation>{url} 的服务器上没有模型 {model}；请从它列出的模型中选择。</translation>
    </message>
    <message>
        <source>The server at {url} is busy (HTTP {status}); try again in a moment.</source>
        <translation>{url} 的服务器正忙（HTTP {status}），请稍后再试。</translation>
    </message>
    <message>
        <source>The server at {url} reported an error: {detail}. The answer so far is kept.</source>
        <translation>{url} 的服务器报告错误：{detail}。已生成的内容已保留。</translation>
    </message>
    <message>
        <source>The connection to {url} was lost in the middle of the answer. The answer so far is kept.</source>
        <translation>回答过程中与 {url} 的连接中断。已生成的内容已保留。</translation>
    </message>
    <message>
        <source>The server at {url} sent nothing for {seconds} s, so the answer was ended. The answer so far is kept.</source>
        <translation>{url} 的服务器 {seconds} 秒内没有发送任何数据，回答已结束。已生成的内容已保留。</translation>
    </message>
    <message>
        <source>The chat history file was damaged. It was kept as {moved_to} (nothing in it was deleted) and a new history was started in {path}.</source>
        <translation>聊天记录文件已损坏。它已保留为 {moved_to}（其中内容均未删除），并在 {path} 开始了新的聊天记录。</translation>
    </message>
</context>
<context>
    <name>FitForecast</name>
    <message>
        <source>weights {weights} + KV cache {kv} ({tokens} tokens) + overhead {overhead}</source>
        <translation>权重 {weights} + KV 缓存 {kv}（{tokens} 个 token）+ 额外开销 {overhead}</translation>
    </message>
    <message>
        <source> + attention work {work}</source>
        <translation> + 注意力工作内存 {work}</translation>
    </message>
    <message>
        <source>{gpu} on the GPU</source>
        <translation>GPU 上 {gpu}</translation>
    </message>
    <message>
        <source>, experts {ram} in system RAM</source>
        <translation>，专家 {ram} 在系统内存中</translation>
    </message>
    <message>
        <source>{ram} in system RAM</source>
        <translation>系统内存中 {ram}</translation>
    </message>
    <message>
        <source>Will it fit: {parts} = {where}; {have}.</source>
        <translation>能否装下：{parts} = {where}；{have}。</translation>
    </message>
    <message>
        <source>{ram} of RAM available</source>
        <translation>可用内存 {ram}</translation>
    </message>
    <message>
        <source>{gpu} free on the GPU, {ram}</source>
        <translation>GPU 空闲显存 {gpu}，{ram}</translation>
    </message>
    <message>
        <source>It cannot fit: the GPU needs about {need} but has {have} free. Choose 4-bit quantization, a shorter context, experts in system RAM (a mixture of experts on llama.cpp) or a smaller model.</source>
        <translation>装不下：GPU 约需 {need}，但只有 {have} 空闲。请选择 4 位量化、更短的上下文、把专家放在系统内存（llama.cpp 上的混合专家模型）或更小的模型。</translation>
    </message>
    <message>
        <source>It cannot fit: it needs about {need} of system RAM but {have} is available. Choose a quantization, a shorter context or a smaller model.</source>
        <translation>装不下：约需 {need} 系统内存，但只有 {have} 可用。请选择量化、更短的上下文或更小的模型。</translation>
    </message>
</context>
<context>
    <name>GetModelDialog</name>
    <message>
        <source>Get a model</source>
        <translation>获取模型</translation>
    </message>
    <message>
        <source>Search models and repositories</source>
        <translation>搜索模型和仓库</translation>
    </message>
    <message>
        <source>All families</source>
        <translation>全部系列</translation>
    </message>
    <message>
        <source>Any capability</source>
        <translation>任意能力</translation>
    </message>
    <message>
        <source>Thinking</source>
        <translation>思考过程</translation>
    </message>
    <message>
        <source>Tools</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>Vision</source>
        <translation>视觉</translation>
    </message>
    <message>
        <source>OCR</source>
        <translation>OCR</translation>
    </message>
    <message>
        <source>Only what runs here</source>
        <translation>只显示本机能运行的</translation>
    </message>
    <message>
        <source>Best that fits</source>
        <translation>装得下的最佳模型</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Sort:</source>
        <translation>排序：</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适配</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Runs</source>
        <translation>运行方式</translation>
    </message>
    <message>
        <source>Why</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Change...</source>
        <translation>更改…</translation>
    </message>
    <message>
        <source>Hub token...</source>
        <translation>模型库令牌…</translation>
    </message>
    <message>
        <source>{gpu} free on the GPU</source>
        <translation>GPU 空闲显存 {gpu}</translation>
    </message>
    <message>
        <source>no GPU</source>
        <translation>没有 GPU</translation>
    </message>
    <message>
        <source>This computer: {gpu}, {ram} of RAM available</source>
        <translation>本机：{gpu}，可用内存 {ram}</translation>
    </message>
    <message>
        <source>, {disk} free on disk</source>
        <translation>，磁盘可用 {disk}</translation>
    </message>
    <message>
        <source>. Marks size the KV cache for 32K tokens (or the model&apos;s context).</source>
        <translation>。标记按 32K 个 token（或模型自身的上下文）估算 KV 缓存。</translation>
    </message>
    <message>
        <source>Models folder: {folder}</source>
        <translation>模型文件夹：{folder}</translation>
    </message>
    <message>
        <source>Fits</source>
        <translation>装得下</translation>
    </message>
    <message>
        <source>Fits, slower</source>
        <translation>装得下，较慢</translation>
    </message>
    <message>
        <source>Too big</source>
        <translation>太大</translation>
    </message>
    <message>
        <source>fast</source>
        <translation>快</translation>
    </message>
    <message>
        <source>medium</source>
        <translation>中等</translation>
    </message>
    <message>
        <source>slow</source>
        <translation>慢</translation>
    </message>
    <message>
        <source> (estimated)</source>
        <translation>（估算）</translation>
    </message>
    <message>
        <source>, downloaded</source>
        <translation>，已下载</translation>
    </message>
    <message>
        <source>Licence: {licence}. Context: {context} tokens. {caps}. Shape: {shape}.</source>
        <translation>许可证：{licence}。上下文：{context} 个 token。{caps}。结构：{shape}。</translation>
    </message>
    <message>
        <source>chat</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>GPU, NF4</source>
        <translation>GPU，NF4</translation>
    </message>
    <message>
        <source>GPU + experts in RAM</source>
        <translation>GPU + 专家放在内存</translation>
    </message>
    <message>
        <source>GPU + CPU layers</source>
        <translation>GPU + 部分层在 CPU</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>weights {weights} + KV at {context} {kv}</source>
        <translation>权重 {weights} + {context} 的 KV 缓存 {kv}</translation>
    </message>
    <message>
        <source>{ram} RAM</source>
        <translation>内存 {ram}</translation>
    </message>
    <message>
        <source>{gpu} GPU + {ram} RAM</source>
        <translation>GPU {gpu} + 内存 {ram}</translation>
    </message>
    <message>
        <source>{head}: needs {total}; {have} is too little</source>
        <translation>{head}：需要 {total}；{have} 不够</translation>
    </message>
    <message>
        <source>{head} = {need} &lt;= {gpu} GPU</source>
        <translation>{head} = {need} &lt;= GPU {gpu}</translation>
    </message>
    <message>
        <source>{head} &gt; {gpu} GPU in bf16; fits in NF4 ({need} on the GPU)</source>
        <translation>{head} &gt; GPU {gpu}（bf16）；用 NF4 装得下（GPU 上 {need}）</translation>
    </message>
    <message>
        <source>{head} &gt; {gpu} GPU; {layers} of {total} layers on the GPU ({need} on the GPU, {ram} in RAM)</source>
        <translation>{head} &gt; GPU {gpu}；{total} 层中的 {layers} 层放在 GPU 上（GPU 上 {need}，内存中 {ram}）</translation>
    </message>
    <message>
        <source>{head} &gt; {gpu} GPU; fits with experts in RAM ({need} on the GPU, {ram} in RAM)</source>
        <translation>{head} &gt; GPU {gpu}；专家放在内存中装得下（GPU 上 {need}，内存中 {ram}）</translation>
    </message>
    <message>
        <source>{head} &gt; {gpu} GPU; runs on the CPU ({need} of {ram} RAM)</source>
        <translation>{head} &gt; GPU {gpu}；在 CPU 上运行（内存 {ram} 中用 {need}）</translation>
    </message>
    <message>
        <source>{head} = {need} &lt;= {ram} RAM (no GPU)</source>
        <translation>{head} = {need} &lt;= 内存 {ram}（没有 GPU）</translation>
    </message>
    <message>
        <source>the download is larger than the free disk ({disk}); </source>
        <translation>下载大小超过磁盘可用空间（{disk}）；</translation>
    </message>
    <message>
        <source>Catalog of {date}. Checking the hub...</source>
        <translation>{date} 的模型目录。正在检查模型库…</translation>
    </message>
    <message>
        <source>Catalog of {date}; the hub is reachable.</source>
        <translation>{date} 的模型目录；模型库可以连接。</translation>
    </message>
    <message>
        <source>Catalog of {date}, shipped with glmdesk. The hub is not reachable ({reason}): downloads wait until it is.</source>
        <translation>glmdesk 自带的 {date} 模型目录。无法连接模型库（{reason}）：下载会等到能连接时再进行。</translation>
    </message>
    <message>
        <source>Models folder</source>
        <translation>模型文件夹</translation>
    </message>
    <message>
        <source>Hub token</source>
        <translation>模型库令牌</translation>
    </message>
    <message>
        <source>A Hugging Face token with read access, for gated models (kept in the system keyring):</source>
        <translation>用于受限模型的 Hugging Face 只读令牌（保存在系统钥匙串中）：</translation>
    </message>
</context>
<context>
    <name>HistoryController</name>
    <message>
        <source>The chat history is saved again.</source>
        <extracomment>Milliseconds between retries of writes that failed.</extracomment>
        <translation>聊天记录已恢复保存。</translation>
    </message>
    <message>
        <source>Some images of this conversation are missing or damaged in the history folder, so they are not shown: {names}.</source>
        <translation>此对话的部分图片在历史记录文件夹中缺失或已损坏，因此未显示：{names}。</translation>
    </message>
</context>
<context>
    <name>HistoryListView</name>
    <message>
        <source>Your conversations will appear here, grouped by day.

Each one is saved as you chat; right-click one to rename, export or delete it.</source>
        <extracomment>The groups, newest first: keys of :func:`date_group`. Side of the row&apos;s &quot;more&quot; button, in px.</extracomment>
        <translation>你的对话会按日期分组显示在这里。

对话在聊天时自动保存；右键点击可重命名、导出或删除。</translation>
    </message>
    <message>
        <source>Today</source>
        <translation>今天</translation>
    </message>
    <message>
        <source>Yesterday</source>
        <translation>昨天</translation>
    </message>
    <message>
        <source>Previous 7 days</source>
        <translation>过去 7 天</translation>
    </message>
    <message>
        <source>Older</source>
        <translation>更早</translation>
    </message>
</context>
<context>
    <name>HistoryPanel</name>
    <message>
        <source>Search all conversations</source>
        <extracomment>Milliseconds the box waits for the next key before it searches.</extracomment>
        <translation>搜索所有对话</translation>
    </message>
    <message>
        <source>New</source>
        <translation>新建</translation>
    </message>
    <message>
        <source>Start a new conversation</source>
        <translation>开始新对话</translation>
    </message>
    <message>
        <source>Import…</source>
        <translation>导入…</translation>
    </message>
    <message>
        <source>Import a conversation from JSON</source>
        <translation>从 JSON 文件导入对话</translation>
    </message>
    <message>
        <source>Undo</source>
        <extracomment>Milliseconds a deletion can be undone.</extracomment>
        <translation>撤销</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <source>Duplicate</source>
        <translation>创建副本</translation>
    </message>
    <message>
        <source>Copy as Markdown</source>
        <translation>复制为 Markdown</translation>
    </message>
    <message>
        <source>Export as Markdown…</source>
        <translation>导出为 Markdown…</translation>
    </message>
    <message>
        <source>Export as JSON…</source>
        <translation>导出为 JSON…</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Untitled</source>
        <translation>未命名对话</translation>
    </message>
    <message>
        <source>Deleted “{title}”.</source>
        <translation>已删除“{title}”。</translation>
    </message>
    <message>
        <source>{title} (copy)</source>
        <translation>{title}（副本）</translation>
    </message>
    <message>
        <source>System</source>
        <translation>系统</translation>
    </message>
    <message>
        <source>User</source>
        <translation>用户</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>(unfinished)</source>
        <translation>（未完成）</translation>
    </message>
    <message>
        <source>(stopped)</source>
        <translation>（已停止）</translation>
    </message>
    <message>
        <source>(failed)</source>
        <translation>（失败）</translation>
    </message>
    <message>
        <source>Thinking</source>
        <translation>思考过程</translation>
    </message>
    <message>
        <source>Documents</source>
        <translation>文档</translation>
    </message>
    <message>
        <source>conversation</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown 文件 (*.md)</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON 文件 (*.json)</translation>
    </message>
    <message>
        <source>Export conversation</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <source>Could not write {path}: {error}</source>
        <translation>无法写入 {path}：{error}</translation>
    </message>
    <message>
        <source>Import conversation</source>
        <translation>导入对话</translation>
    </message>
    <message>
        <source>Import failed</source>
        <translation>导入失败</translation>
    </message>
    <message>
        <source>Could not import {path}: {error}</source>
        <translation>无法导入 {path}：{error}</translation>
    </message>
    <message>
        <source>No messages match “{query}”.</source>
        <translation>没有消息匹配“{query}”。</translation>
    </message>
</context>
<context>
    <name>ImageThumbnail</name>
    <message>
        <source>pasted image</source>
        <extracomment>Longest side of a thumbnail, in pixels. Widest a tool&apos;s image is shown, in px (wider ones are scaled down, aspect kept).</extracomment>
        <translation>粘贴的图片</translation>
    </message>
    <message>
        <source>{name} (cannot be shown)</source>
        <translation>{name}（无法显示）</translation>
    </message>
    <message>
        <source>{name}, {width} × {height} px</source>
        <translation>{name}，{width} × {height} 像素</translation>
    </message>
    <message>
        <source>the model sees it at {width} × {height} px ({tokens} tokens)</source>
        <translation>模型看到的尺寸为 {width} × {height} 像素（{tokens} 个 token）</translation>
    </message>
    <message>
        <source>image</source>
        <translation>图片</translation>
    </message>
</context>
<context>
    <name>ImageViewer</name>
    <message>
        <source>This image cannot be shown.</source>
        <translation>无法显示这张图片。</translation>
    </message>
</context>
<context>
    <name>InputBox</name>
    <message>
        <source>Type a message. Enter sends, Shift+Enter adds a line, Esc stops the answer.</source>
        <extracomment>Longest line shown as one block, in characters; longer ones are cut for display only. ``QTextBlock.userState()`` of a block that continues the previous line (no newline between). Suffixes of files a drop attaches as images (the bytes decide: see ``ImageAttachment``).</extracomment>
        <translation>输入消息。Enter 发送，Shift+Enter 换行，Esc 停止回答。</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Send the message (Enter)</source>
        <translation>发送消息（Enter）</translation>
    </message>
    <message>
        <source>Image…</source>
        <translation>图片…</translation>
    </message>
    <message>
        <source>OCR a page…</source>
        <translation>OCR 识别页面…</translation>
    </message>
    <message>
        <source>Needs an OCR model (GLM-OCR).</source>
        <translation>需要 OCR 模型（GLM-OCR）。</translation>
    </message>
    <message>
        <source>Images need a GLM vision model (GLM-4.1V, GLM-4.6V).</source>
        <translation>图片需要 GLM 视觉模型（GLM-4.1V、GLM-4.6V）。</translation>
    </message>
    <message>
        <source>Attach an image (or paste or drop one)</source>
        <translation>附加图片（也可以粘贴或拖放）</translation>
    </message>
    <message>
        <source>Attach images</source>
        <translation>附加图片</translation>
    </message>
    <message>
        <source>Images (*.png *.jpg *.jpeg *.webp *.gif)</source>
        <translation>图片 (*.png *.jpg *.jpeg *.webp *.gif)</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop the answer (Esc); the text so far is kept</source>
        <translation>停止回答（Esc），已生成的内容会保留</translation>
    </message>
</context>
<context>
    <name>KeepThinkingChoice</name>
    <message>
        <source>Earlier thinking</source>
        <extracomment>The template value this choice sets (``True``: drop earlier thinking). The box&apos;s items in order: the model&apos;s default, Keep, Drop.</extracomment>
        <translation>之前的思考</translation>
    </message>
    <message>
        <source>Load a model first.</source>
        <translation>请先加载模型。</translation>
    </message>
    <message>
        <source>Server default</source>
        <translation>服务器默认</translation>
    </message>
    <message>
        <source>Model default (keep)</source>
        <translation>模型默认（保留）</translation>
    </message>
    <message>
        <source>Model default (drop)</source>
        <translation>模型默认（丢弃）</translation>
    </message>
    <message>
        <source>Keep</source>
        <translation>保留</translation>
    </message>
    <message>
        <source>Drop</source>
        <translation>丢弃</translation>
    </message>
    <message>
        <source>Keep: the thinking of earlier answers stays in the prompt (the model sees how it reasoned, the prompt grows). Drop: only their answers stay. This chat only; from the next answer.</source>
        <translation>保留：之前回答的思考过程留在提示词中（模型能看到自己如何推理，提示词随之变长）。丢弃：只保留之前的回答。仅对本对话有效；从下一次回答起生效。</translation>
    </message>
</context>
<context>
    <name>KeepThinkingMemory</name>
    <message>
        <source>{model}&apos;s chat template has no choice about earlier thinking (GLM-4.7 and the GLM-5 line have one).</source>
        <extracomment>The key of the choice in the conversation&apos;s settings.</extracomment>
        <translation>{model} 的聊天模板无法选择是否保留之前的思考（GLM-4.7 和 GLM-5 系列可以）。</translation>
    </message>
</context>
<context>
    <name>LlamaCppOptions</name>
    <message>
        <source>Automatic (the model&apos;s, at most {n})</source>
        <translation>自动（模型自身的，最多 {n}）</translation>
    </message>
    <message>
        <source>Tokens of context llama.cpp keeps for the full KV cache: a longer context holds longer conversations and takes more memory (the gauge shows the KV cache).</source>
        <translation>llama.cpp 为完整 KV 缓存保留的上下文 token 数：上下文越长，能容纳的对话越长，占用的内存也越多（内存仪表显示 KV 缓存）。</translation>
    </message>
    <message>
        <source>Prompt tokens per llama.cpp call (prefill): larger batches read long prompts faster and take a larger compute buffer.</source>
        <translation>每次 llama.cpp 调用处理的提示 token 数（预填充）：批次越大，读取长提示越快，计算缓冲区也越大。</translation>
    </message>
    <message>
        <source>Map the file into memory</source>
        <translation>将文件映射到内存</translation>
    </message>
    <message>
        <source>Loads at once and shares the weights with the system&apos;s file cache; off reads the whole file into memory first.</source>
        <translation>立即加载，并与系统文件缓存共享权重；关闭时先将整个文件读入内存。</translation>
    </message>
    <message>
        <source>All</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Experts in system RAM</source>
        <translation>专家放在系统内存</translation>
    </message>
    <message>
        <source>For a mixture-of-experts model (GLM-4.5, GLM-4.7-Flash): keep the experts&apos; weights in system RAM and the rest on the GPU, so a model larger than the GPU&apos;s memory runs (slower than all on the GPU). Dense models ignore it.</source>
        <translation>用于混合专家模型：把专家权重放在系统内存，其余放在 GPU 上，这样比显存更大的模型也能运行（比全部放在 GPU 上慢）。稠密模型会忽略此项。</translation>
    </message>
    <message>
        <source>Layers llama.cpp keeps on the GPU: more layers decode faster and take more GPU memory.</source>
        <translation>llama.cpp 放在 GPU 上的层数：层数越多解码越快，占用的显存也越多。</translation>
    </message>
    <message>
        <source>Context (tokens)</source>
        <translation>上下文（token）</translation>
    </message>
    <message>
        <source>Prefill batch (tokens)</source>
        <translation>预填充批次（token）</translation>
    </message>
    <message>
        <source>GPU layers</source>
        <translation>GPU 层数</translation>
    </message>
</context>
<context>
    <name>LoadIndicator</name>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop loading; the previous model stays in use</source>
        <translation>停止加载，继续使用之前的模型</translation>
    </message>
    <message>
        <source>Finding the model</source>
        <translation>正在查找模型</translation>
    </message>
    <message>
        <source>Converting (first use only)</source>
        <translation>正在转换（仅首次使用）</translation>
    </message>
    <message>
        <source>Checking weight files</source>
        <translation>正在检查权重文件</translation>
    </message>
    <message>
        <source>Loading weights</source>
        <translation>正在加载权重</translation>
    </message>
    <message>
        <source>Quantizing weights</source>
        <translation>正在量化权重</translation>
    </message>
    <message>
        <source>Preparing</source>
        <translation>正在准备</translation>
    </message>
    <message>
        <source>Compiling the decode step (1-2 minutes the first time)</source>
        <translation>正在编译解码步骤（首次约需 1-2 分钟）</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Loading {name}...</source>
        <translation>正在加载 {name}…</translation>
    </message>
    <message>
        <source>{stage}: {done} of {total}</source>
        <translation>{stage}：{done}/{total}</translation>
    </message>
    <message>
        <source>{stage} ({seconds} s)</source>
        <translation>{stage}（{seconds} 秒）</translation>
    </message>
    <message>
        <source>Cancelling...</source>
        <translation>正在取消…</translation>
    </message>
</context>
<context>
    <name>LoadNotes</name>
    <message>
        <source>fp16 is not supported for CPU inference; using fp32 instead.</source>
        <translation>CPU 推理不支持 fp16，已改用 fp32。</translation>
    </message>
    <message>
        <source>{quantization} runs on bitsandbytes&apos; CPU backend here, which is slow.</source>
        <translation>{quantization} 在此使用 bitsandbytes 的 CPU 后端运行，速度较慢。</translation>
    </message>
    <message>
        <source>llama.cpp runs the GGUF file&apos;s own weights; {options} applies to the transformers engine.</source>
        <translation>llama.cpp 直接运行 GGUF 文件自带的权重；{options} 仅适用于 transformers 引擎。</translation>
    </message>
    <message>
        <source>llama.cpp crashed here while it answered, so transformers runs this {file_type} file with {quantization} weights; choose llama.cpp in Open model to use it again.</source>
        <translation>llama.cpp 在此回答时崩溃，因此由 transformers 以 {quantization} 权重运行此 {file_type} 文件；在“打开模型”中选择 llama.cpp 即可再次使用它。</translation>
    </message>
    <message>
        <source>llama.cpp is not installed yet, so transformers runs this {file_type} file with {quantization} weights (the file&apos;s own groups and grid).</source>
        <translation>尚未安装 llama.cpp，因此由 transformers 以 {quantization} 权重运行此 {file_type} 文件（与文件自身的分组和量化网格相同）。</translation>
    </message>
    <message>
        <source>{tensors} expert tensors ({mib} MiB) are kept in system RAM.</source>
        <translation>{tensors} 个专家张量（{mib} MiB）保留在系统内存中。</translation>
    </message>
    <message>
        <source>This model has no experts (it is not a mixture of experts); experts in RAM does nothing.</source>
        <translation>此模型没有专家（不是混合专家模型），“专家放在系统内存”不起作用。</translation>
    </message>
    <message>
        <source>The model runs on the CPU, so its experts are in system RAM already.</source>
        <translation>模型在 CPU 上运行，其专家权重本来就在系统内存中。</translation>
    </message>
    <message>
        <source>The model does not fit the GPU&apos;s free memory: {mib} MiB of its experts are kept in system RAM (accelerate&apos;s device map), which is slower.</source>
        <translation>模型超出 GPU 的空闲显存：其 {mib} MiB 的专家权重保留在系统内存中（accelerate 的设备映射），速度较慢。</translation>
    </message>
    <message>
        <source>The decode step was not compiled ({reason}); tokens are decoded without it.</source>
        <translation>解码步骤未能编译（{reason}）；将不经编译进行解码。</translation>
    </message>
    <message>
        <source>No CUDA GPU was found; glmdesk runs on the CPU.</source>
        <translation>未找到 CUDA GPU，glmdesk 将在 CPU 上运行。</translation>
    </message>
    <message>
        <source>fp16 needs a GPU; on the CPU glmdesk uses fp32.</source>
        <translation>fp16 需要 GPU；在 CPU 上 glmdesk 使用 fp32。</translation>
    </message>
    <message>
        <source>This GPU has no bf16 support; use fp16.</source>
        <translation>此 GPU 不支持 bf16，请使用 fp16。</translation>
    </message>
    <message>
        <source>llama-cpp-python is not installed (pip install &apos;glmdesk[llamacpp]&apos;).</source>
        <translation>未安装 llama-cpp-python（pip install &apos;glmdesk[llamacpp]&apos;）。</translation>
    </message>
    <message>
        <source>This llama-cpp-python build has no GPU offload (a CPU build).</source>
        <translation>此 llama-cpp-python 构建不支持 GPU 卸载（CPU 版本）。</translation>
    </message>
    <message>
        <source>llama-cpp-python cannot be loaded here.</source>
        <translation>此处无法加载 llama-cpp-python。</translation>
    </message>
    <message>
        <source>The installed llama.cpp build crashed or answered wrongly in its test (rebuild it: glmdesk build-llamacpp).</source>
        <translation>已安装的 llama.cpp 构建在测试中崩溃或回答错误（请重新构建：glmdesk build-llamacpp）。</translation>
    </message>
    <message>
        <source>The packaged app cannot compile; run glmdesk from Python to use it.</source>
        <translation>打包版应用无法编译；如需使用，请从 Python 运行 glmdesk。</translation>
    </message>
    <message>
        <source>No C++ compiler was found (g++, clang++ or cl).</source>
        <translation>未找到 C++ 编译器（g++、clang++ 或 cl）。</translation>
    </message>
    <message>
        <source>This torch build has no CPU kernel for it.</source>
        <translation>当前 torch 版本没有对应的 CPU 内核。</translation>
    </message>
    <message>
        <source>bitsandbytes cannot be used here (it is not installed).</source>
        <translation>此处无法使用 bitsandbytes（未安装）。</translation>
    </message>
    <message>
        <source>torchao is not installed (pip install &apos;glmdesk[cuda-quant]&apos;).</source>
        <translation>未安装 torchao（pip install &apos;glmdesk[cuda-quant]&apos;）。</translation>
    </message>
    <message>
        <source>GLM-4.5/4.6/4.7 (reasoning, XML tool calls)</source>
        <translation>GLM-4.5/4.6/4.7（推理，XML 工具调用）</translation>
    </message>
    <message>
        <source>GLM-Z1 (reasoning, no tool calls)</source>
        <translation>GLM-Z1（推理，无工具调用）</translation>
    </message>
    <message>
        <source>the chat template only</source>
        <translation>仅聊天模板</translation>
    </message>
    <message>
        <source>The prompt format is {format}, as chosen, though the checkpoint is {checkpoint}.</source>
        <translation>提示词格式为所选的 {format}，尽管该检查点是 {checkpoint}。</translation>
    </message>
    <message>
        <source>The chat template is {format}, so this {checkpoint} checkpoint is prompted that way (another format can be chosen in Open model).</source>
        <translation>聊天模板是 {format}，因此这个 {checkpoint} 检查点按此格式提示（可在“打开模型”中选择其他格式）。</translation>
    </message>
</context>
<context>
    <name>LoadView</name>
    <message>
        <source>the embedded model</source>
        <translation>内置模型</translation>
    </message>
    <message>
        <source>{model} - glmdesk</source>
        <translation>{model} - glmdesk</translation>
    </message>
    <message>
        <source>{error} {model} stays in use.</source>
        <translation>{error}继续使用 {model}。</translation>
    </message>
    <message>
        <source>{error} The embedded model is loaded instead.</source>
        <translation>{error}已改为加载内置模型。</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>glmdesk</source>
        <translation>glmdesk</translation>
    </message>
    <message>
        <source>the embedded model</source>
        <translation>内置模型</translation>
    </message>
    <message>
        <source>Wait until the model has loaded, then send your message again.</source>
        <translation>请等待模型加载完成后再发送消息。</translation>
    </message>
    <message>
        <source>Answer copied.</source>
        <translation>已复制回答。</translation>
    </message>
    <message>
        <source>Message copied.</source>
        <translation>已复制消息。</translation>
    </message>
</context>
<context>
    <name>MarkdownView</name>
    <message>
        <source>(TeX shown: {command} cannot be drawn here)</source>
        <extracomment>The scheme of the links a code block&apos;s header offers (&quot;Copy&quot;): ``copy-code:N``, the N-th code block of the view (0-based); never opened, only handled here. A code block&apos;s padding (text inset, space above and below on its background), in px.</extracomment>
        <translation>（显示 TeX 源码：此处无法绘制 {command}）</translation>
    </message>
    <message>
        <source>(TeX shown: this formula cannot be drawn here)</source>
        <translation>（显示 TeX 源码：此处无法绘制该公式）</translation>
    </message>
    <message>
        <source>code</source>
        <translation>代码</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>复制代码</translation>
    </message>
</context>
<context>
    <name>McpChoiceList</name>
    <message>
        <source>Start an MCP server?</source>
        <translation>启动 MCP 服务器？</translation>
    </message>
    <message>
        <source>glmdesk will run this command for the MCP server {name}:

{command}

Run it?</source>
        <translation>glmdesk 将为 MCP 服务器 {name} 运行此命令：

{command}

要运行吗？</translation>
    </message>
</context>
<context>
    <name>McpServersPage</name>
    <message>
        <source>Server</source>
        <translation>服务器</translation>
    </message>
    <message>
        <source>Command or URL</source>
        <translation>命令或 URL</translation>
    </message>
    <message>
        <source>Time limit</source>
        <translation>时间限制</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Add...</source>
        <translation>添加…</translation>
    </message>
    <message>
        <source>Edit...</source>
        <translation>编辑…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Turn off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>Import...</source>
        <translation>导入…</translation>
    </message>
    <message>
        <source>Start / restart</source>
        <translation>启动 / 重启</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Start with glmdesk</source>
        <translation>随 glmdesk 启动</translation>
    </message>
    <message>
        <source> s</source>
        <translation> 秒</translation>
    </message>
    <message>
        <source>The longest a call of this server&apos;s tools may take</source>
        <translation>调用此服务器的工具最长可用的时间</translation>
    </message>
    <message>
        <source>Attach to message</source>
        <translation>附加到消息</translation>
    </message>
    <message>
        <source>Revoke</source>
        <translation>撤销</translation>
    </message>
    <message>
        <source>Run tools the server marks read-only without asking</source>
        <translation>服务器标记为只读的工具无需询问即可运行</translation>
    </message>
    <message>
        <source>MCP servers</source>
        <translation>MCP 服务器</translation>
    </message>
    <message>
        <source>Resources</source>
        <translation>资源</translation>
    </message>
    <message>
        <source>Tools always allowed</source>
        <translation>始终允许的工具</translation>
    </message>
    <message>
        <source>turned off</source>
        <translation>已关闭</translation>
    </message>
    <message numerus="yes">
        <source>ready, %n tool(s)</source>
        <translation>
            <numerusform>就绪，%n 个工具</numerusform>
        </translation>
    </message>
    <message>
        <source>failed: {error}</source>
        <translation>失败：{error}</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>正在开始</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Turn on</source>
        <translation>开启</translation>
    </message>
    <message>
        <source>Its last output:</source>
        <translation>最后的输出：</translation>
    </message>
    <message>
        <source>Secrets not kept</source>
        <translation>密钥未保存</translation>
    </message>
    <message>
        <source>No keyring took these secrets, so they were not saved: {names}</source>
        <translation>没有可用的密钥环，以下密钥未保存：{names}</translation>
    </message>
    <message>
        <source>Import MCP servers</source>
        <translation>导入 MCP 服务器</translation>
    </message>
    <message>
        <source>JSON files (*.json)</source>
        <translation>JSON 文件 (*.json)</translation>
    </message>
    <message>
        <source>Start an MCP server?</source>
        <extracomment>The per-chat setting&apos;s key.</extracomment>
        <translation>启动 MCP 服务器？</translation>
    </message>
    <message>
        <source>glmdesk will run this command for the MCP server {name}:

{command}

Run it?</source>
        <translation>glmdesk 将为 MCP 服务器 {name} 运行此命令：

{command}

要运行吗？</translation>
    </message>
</context>
<context>
    <name>McpServersWindow</name>
    <message>
        <source>&amp;MCP servers...</source>
        <translation>MCP 服务器…(&amp;M)</translation>
    </message>
    <message>
        <source>Add, start and stop MCP servers; the tools always allowed</source>
        <translation>添加、启动和停止 MCP 服务器；始终允许的工具</translation>
    </message>
    <message>
        <source>MCP servers</source>
        <translation>MCP 服务器</translation>
    </message>
    <message>
        <source>{label} is in the message box; send it when ready.</source>
        <translation>{label} 已放入消息框，准备好后发送。</translation>
    </message>
</context>
<context>
    <name>MemoryGauge</name>
    <message>
        <source>CPU (looking for a GPU)</source>
        <translation>CPU（正在查找 GPU）</translation>
    </message>
    <message>
        <source>GPU: {device}</source>
        <translation>GPU：{device}</translation>
    </message>
    <message>
        <source>CPU, no GPU found</source>
        <translation>CPU，未找到 GPU</translation>
    </message>
    <message>
        <source>nvidia-ml-py is not installed, so GPU memory cannot be read.</source>
        <translation>未安装 nvidia-ml-py，无法读取显存用量。</translation>
    </message>
    <message>
        <source>The NVIDIA driver&apos;s NVML library was not found.</source>
        <translation>未找到 NVIDIA 驱动的 NVML 库。</translation>
    </message>
    <message>
        <source>The NVIDIA driver did not answer.</source>
        <translation>NVIDIA 驱动没有响应。</translation>
    </message>
    <message>
        <source>No NVIDIA GPU was found.</source>
        <translation>未找到 NVIDIA GPU。</translation>
    </message>
    <message>
        <source>Memory: remote</source>
        <translation>内存：远程</translation>
    </message>
    <message>
        <source>The model runs on the server at {url}; this computer&apos;s memory is not the model&apos;s.</source>
        <translation>模型运行在 {url} 的服务器上；本机内存并非模型所用的内存。</translation>
    </message>
    <message>
        <source>On the server at {url}</source>
        <translation>位于 {url} 的服务器上</translation>
    </message>
    <message>
        <source>KV cache {percent} used on the server</source>
        <translation>服务器 KV 缓存已用 {percent}</translation>
    </message>
    <message>
        <source>{used} of {total} used on the GPU</source>
        <translation>GPU 显存已用 {used}，共 {total}</translation>
    </message>
    <message>
        <source>This process uses {used} of {total} RAM</source>
        <translation>本进程占用内存 {used}，共 {total}</translation>
    </message>
    <message>
        <source>&lt;span style=&quot;color:{wc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;weights&amp;nbsp;{weights} &lt;span style=&quot;color:{kc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;KV&amp;nbsp;cache&amp;nbsp;{kv} &lt;span style=&quot;color:{oc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;other&amp;nbsp;{other}</source>
        <translation>&lt;span style=&quot;color:{wc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;权重&amp;nbsp;{weights} &lt;span style=&quot;color:{kc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;KV&amp;nbsp;缓存&amp;nbsp;{kv} &lt;span style=&quot;color:{oc}&quot;&gt;&amp;#9632;&lt;/span&gt;&amp;nbsp;其他&amp;nbsp;{other}</translation>
    </message>
</context>
<context>
    <name>MessageFooter</name>
    <message>
        <source>Previous version</source>
        <extracomment>Actions a footer offers, by role.</extracomment>
        <translation>上一个版本</translation>
    </message>
    <message>
        <source>Next version</source>
        <translation>下一个版本</translation>
    </message>
    <message>
        <source>Stopped at the token limit (max new tokens).</source>
        <translation>已达到 token 上限（最大新 token 数）而停止。</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy answer</source>
        <translation>复制回答</translation>
    </message>
    <message>
        <source>Copy this message</source>
        <translation>复制这条消息</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <source>Edit and send again: the answer below becomes another version</source>
        <translation>编辑后重新发送：下面的回答将成为另一个版本</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Go on writing this answer where the token limit cut it</source>
        <translation>从达到 token 上限处接着写这条回答</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <source>Write this answer again as another version</source>
        <translation>重新写这条回答，作为另一个版本</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Delete this message (the replies below it stay)</source>
        <translation>删除这条消息（它下面的回复会保留）</translation>
    </message>
    <message>
        <source>Copy as plain text</source>
        <translation>复制为纯文本</translation>
    </message>
    <message>
        <source>Copy as Markdown</source>
        <translation>复制为 Markdown</translation>
    </message>
</context>
<context>
    <name>MessageWidget</name>
    <message>
        <source>Copy</source>
        <extracomment>Share of the column&apos;s width left empty beside a user&apos;s bubble (it sits on the right). Corner radius of a bubble, in px. The narrowest a user&apos;s bubble gets, in px. A user&apos;s message longer than this (characters) is not measured: its bubble takes the column. Padding inside a message, in px (left and right together: ``centred_column.MESSAGE_PADDING``).</extracomment>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy this message as Markdown</source>
        <translation>以 Markdown 格式复制此消息</translation>
    </message>
    <message>
        <source>Show all</source>
        <translation>显示全部</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>System</source>
        <translation>系统</translation>
    </message>
    <message>
        <source>Tool result</source>
        <translation>工具结果</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <source>Showing the first {shown} of {total} characters; Copy and export keep all of it.</source>
        <translation>仅显示 {total} 个字符中的前 {shown} 个；复制和导出会保留全部内容。</translation>
    </message>
    <message>
        <source>writing...</source>
        <translation>生成中…</translation>
    </message>
</context>
<context>
    <name>ModelChip</name>
    <message>
        <source>Open a model…</source>
        <translation>打开模型…</translation>
    </message>
    <message>
        <source>Open model (Ctrl+O)</source>
        <translation>打开模型（Ctrl+O）</translation>
    </message>
    <message>
        <source>Loading {name}…</source>
        <translation>正在加载 {name}…</translation>
    </message>
    <message>
        <source>server</source>
        <translation>服务器</translation>
    </message>
    <message>
        <source>{where}
{location}
Click to open another model (Ctrl+O).</source>
        <translation>{where}
{location}
点击打开其他模型（Ctrl+O）。</translation>
    </message>
</context>
<context>
    <name>NoticeBar</name>
    <message>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>OcrPageAction</name>
    <message>
        <source>OCR a page</source>
        <extracomment>``choose_file(parent) -&gt; path or &quot;&quot;`` and ``choose_page(parent, name, count) -&gt; page or 0``.</extracomment>
        <translation>OCR 识别页面</translation>
    </message>
    <message>
        <source>Pages and images (*.pdf *.png *.jpg *.jpeg *.webp *.gif)</source>
        <translation>页面和图片 (*.pdf *.png *.jpg *.jpeg *.webp *.gif)</translation>
    </message>
    <message>
        <source>Page of {name} to read (1 to {count}):</source>
        <translation>要识别 {name} 的第几页（1 到 {count}）：</translation>
    </message>
    <message>
        <source>Read a page&apos;s text as Markdown: an image, or one page of a PDF</source>
        <translation>将页面文字识别为 Markdown：一张图片，或 PDF 的一页</translation>
    </message>
    <message>
        <source>Needs an OCR model (GLM-OCR).</source>
        <translation>需要 OCR 模型（GLM-OCR）。</translation>
    </message>
    <message>
        <source>The page could not be read: {detail}</source>
        <translation>无法读取该页：{detail}</translation>
    </message>
    <message>
        <source>Wait until the answer or the model is ready, then OCR the page.</source>
        <translation>请等待回答结束或模型就绪，然后再识别页面。</translation>
    </message>
</context>
<context>
    <name>OpenModelDialog</name>
    <message>
        <source>Open model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <source>Empty: the embedded default model</source>
        <translation>留空：使用内置的默认模型</translation>
    </message>
    <message>
        <source>A model folder, a .gguf file, or a hub id such as THUDM/chatglm3-6b</source>
        <translation>模型文件夹、.gguf 文件，或 Hub 模型 ID（如 THUDM/chatglm3-6b）</translation>
    </message>
    <message>
        <source>Folder...</source>
        <translation>文件夹…</translation>
    </message>
    <message>
        <source>.gguf file...</source>
        <translation>.gguf 文件…</translation>
    </message>
    <message>
        <source>Embedded</source>
        <translation>内置模型</translation>
    </message>
    <message>
        <source>SmolLM2-135M-Instruct, shipped with glmdesk</source>
        <translation>SmolLM2-135M-Instruct，随 glmdesk 一起提供</translation>
    </message>
    <message>
        <source>None</source>
        <translation>无</translation>
    </message>
    <message>
        <source>8-bit (bitsandbytes LLM.int8)</source>
        <translation>8 位（bitsandbytes LLM.int8）</translation>
    </message>
    <message>
        <source>4-bit NF4 (bitsandbytes)</source>
        <translation>4 位 NF4（bitsandbytes）</translation>
    </message>
    <message>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>{crashed} crashed while it answered, so Automatic runs this model on {engine}; choose {crashed} here to use it again.</source>
        <translation>{crashed} 在回答时崩溃，因此“自动”改用 {engine} 运行此模型；在此选择 {crashed} 即可再次使用它。</translation>
    </message>
    <message>
        <source>Automatic (adapts to CPU load)</source>
        <translation>自动（随 CPU 负载调整）</translation>
    </message>
    <message>
        <source>Automatic (one per core)</source>
        <translation>自动（每个核心一个）</translation>
    </message>
    <message>
        <source>int8 weight-only (torch on the CPU, torchao on a GPU)</source>
        <translation>int8 仅权重量化（CPU 上用 torch，GPU 上用 torchao）</translation>
    </message>
    <message>
        <source>int4 weight-only (torch on the CPU, torchao tinygemm on a GPU)</source>
        <translation>int4 仅权重量化（CPU 上用 torch，GPU 上用 torchao tinygemm）</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>GPU (CUDA)</source>
        <translation>GPU（CUDA）</translation>
    </message>
    <message>
        <source>Threads for the CPU&apos;s matrix kernels</source>
        <translation>CPU 矩阵运算使用的线程数</translation>
    </message>
    <message>
        <source>Fused decode step</source>
        <translation>融合解码步骤</translation>
    </message>
    <message>
        <source>On the CPU, run each layer&apos;s query/key/value and gate/up projections as one and decode without transformers&apos; per-layer overhead (Llama and GLM models; same answers, faster)</source>
        <translation>在 CPU 上把每层的查询、键、值投影以及门控、上投影各合并为一次计算，并跳过框架的逐层开销进行解码（适用于 Llama 和 GLM 架构的模型；回答不变，速度更快）</translation>
    </message>
    <message>
        <source>Compile the decode step</source>
        <translation>编译解码步骤</translation>
    </message>
    <message>
        <source>torch.compile of the decode step on static KV buffers (Llama and GLM models; every KV cache but the quantized one; CUDA graphs on a GPU): faster tokens, but each load takes about 30 s longer (1-3 minutes the first time) and needs a C++ compiler on the CPU</source>
        <translation>在静态 KV 缓冲区上用 torch.compile 编译解码步骤（适用于 Llama 和 GLM 架构的模型；除量化 KV 缓存外的所有 KV 缓存；GPU 上使用 CUDA 图）：生成更快，但每次加载约多用 30 秒（首次约需 1-3 分钟），且在 CPU 上需要 C++ 编译器</translation>
    </message>
    <message>
        <source>Only for folders you trust: the model&apos;s own code runs with your permissions. ChatGLM2/3 and GLM-4 run without it.</source>
        <translation>仅用于你信任的文件夹：模型自带的代码将以你的权限运行。ChatGLM2/3 和 GLM-4 无需此项即可运行。</translation>
    </message>
    <message>
        <source>Choose a recent model...</source>
        <translation>选择最近使用的模型…</translation>
    </message>
    <message>
        <source>{name} (downloaded)</source>
        <translation>{name}（已下载）</translation>
    </message>
    <message>
        <source>Recent</source>
        <translation>最近使用</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Quantization</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精度</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <source>Prompt format</source>
        <translation>提示词格式</translation>
    </message>
    <message>
        <source>The model, precision, quantization and threads apply when loading finishes; the current model stays in use until then.</source>
        <translation>模型、精度、量化和线程数设置在加载完成后生效；在此之前继续使用当前模型。</translation>
    </message>
    <message>
        <source>The model, engine, precision, quantization and threads above are for models on this computer: a server loads its model with its own, and keeps its own KV cache.</source>
        <translation>上面的模型、引擎、精度、量化和线程设置仅适用于本机上的模型：服务器以自己的设置加载模型，并自行管理 KV 缓存。</translation>
    </message>
    <message>
        <source>On a GPU this needs torchao (pip install &apos;glmdesk[cuda-quant]&apos;): choose the CPU device, or 8-bit or 4-bit NF4.</source>
        <translation>在 GPU 上需要 torchao（pip install &apos;glmdesk[cuda-quant]&apos;）：请选择 CPU 设备，或 8 位或 4 位 NF4。</translation>
    </message>
    <message>
        <source>Weight-only int8/int4 on the GPU</source>
        <translation>GPU 上的 int8/int4 仅权重量化</translation>
    </message>
    <message>
        <source>{kind} {value}</source>
        <translation>{kind} {value}</translation>
    </message>
    <message>
        <source>Runs in {engine} (its own copy of the weights, dequantized to fp32): llama-cpp-python is not installed (pip install &apos;glmdesk[llamacpp]&apos;).</source>
        <translation>使用 {engine} 运行（其自己的权重副本，反量化为 fp32）：未安装 llama-cpp-python（pip install &apos;glmdesk[llamacpp]&apos;）。</translation>
    </message>
    <message>
        <source>Runs in {engine} (its own copy of the weights): the installed llama.cpp build crashed or answered wrongly in its test, so it is not used (rebuild it: glmdesk build-llamacpp).</source>
        <translation>在 {engine} 中运行（使用其自己的权重副本）：已安装的 llama.cpp 构建在测试中崩溃或回答错误，因此不使用它（请重新构建：glmdesk build-llamacpp）。</translation>
    </message>
    <message>
        <source>{file} is a vision projector: {engine} runs this model&apos;s text only here (llama-cpp-python has no GLM vision handler). To show the model images, open its Hugging Face folder with the transformers engine, or connect to a server that runs it.</source>
        <translation>{file} 是视觉投影器：此处 {engine} 只运行该模型的文本部分（llama-cpp-python 没有 GLM 视觉处理器）。要让模型看图片，请用 transformers 引擎打开它的 Hugging Face 文件夹，或连接运行它的服务器。</translation>
    </message>
    <message>
        <source>GPU layers (llama.cpp)</source>
        <translation>GPU 层数（llama.cpp）</translation>
    </message>
    <message>
        <source>Experts in system RAM (llama.cpp)</source>
        <translation>专家放在系统内存（llama.cpp）</translation>
    </message>
    <message>
        <source>{option}: {reason}</source>
        <translation>{option}：{reason}</translation>
    </message>
    <message>
        <source>Choose a model folder</source>
        <translation>选择模型文件夹</translation>
    </message>
    <message>
        <source>Choose a GGUF file</source>
        <translation>选择 GGUF 文件</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <source>Run the Python code shipped in the folder “{folder}”</source>
        <translation>运行文件夹“{folder}”中自带的 Python 代码</translation>
    </message>
    <message>
        <source>Run the Python code shipped in a model folder (choose a folder first)</source>
        <translation>运行模型文件夹中自带的 Python 代码（请先选择文件夹）</translation>
    </message>
    <message>
        <source>Model folders and hub ids run in transformers.</source>
        <translation>模型文件夹和 Hub ID 使用 transformers 运行。</translation>
    </message>
    <message>
        <source>Runs in transformers: the file&apos;s weights are turned into fp32 once and kept, and the torch quantizations and the compiled decode step can be used.</source>
        <translation>使用 transformers 运行：文件的权重只转换一次为 fp32 并保存，可以使用 torch 量化和编译解码步骤。</translation>
    </message>
    <message>
        <source>Runs in llama.cpp: .gguf files run there on their own quantized weights, several times faster on the CPU than transformers&apos; fp32 copy and without a conversion. Quantization, precision and the decode-step options apply to transformers.</source>
        <translation>使用 llama.cpp 运行：.gguf 文件在其中直接使用自带的量化权重，在 CPU 上比 transformers 的 fp32 副本快数倍，且无需转换。量化、精度和解码步骤选项仅适用于 transformers。</translation>
    </message>
</context>
<context>
    <name>PassageDialog</name>
    <message>
        <source>This passage is no longer in the index as it was given: the file changed or was taken out of the library after this answer.</source>
        <translation>此段落已不在索引中（与当时提供的不同）：此回答之后文件已更改或已从资料库中移除。</translation>
    </message>
    <message>
        <source>(The file is no longer on disk; this is the text that was given.)</source>
        <translation>（文件已不在磁盘上；以下是当时提供的文本。）</translation>
    </message>
    <message>
        <source>Open the file</source>
        <translation>打开文件</translation>
    </message>
</context>
<context>
    <name>ProductMenus</name>
    <message>
        <source>&amp;Get a model...</source>
        <translation>获取模型(&amp;G)…</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;Keyboard shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;About glmdesk</source>
        <translation>关于 glmdesk(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;Open model...</source>
        <translation>打开模型(&amp;O)…</translation>
    </message>
    <message>
        <source>&amp;New chat</source>
        <translation>新建对话(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Stop answer</source>
        <translation>停止回答(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Regenerate last answer</source>
        <translation>重新生成上一个回答(&amp;R)</translation>
    </message>
    <message>
        <source>C&amp;ontinue the cut answer</source>
        <translation>继续被截断的回答(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Copy last answer</source>
        <translation>复制上一个回答(&amp;C)</translation>
    </message>
    <message>
        <source>Show &amp;settings</source>
        <translation>显示设置(&amp;S)</translation>
    </message>
    <message>
        <source>Show or hide the settings (Ctrl+Shift+S)</source>
        <translation>显示或隐藏设置（Ctrl+Shift+S）</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Chat</source>
        <translation>对话(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Server</source>
        <translation>服务器(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Tools</source>
        <translation>工具(&amp;T)</translation>
    </message>
    <message>
        <source>Get a model</source>
        <translation>获取模型</translation>
    </message>
    <message>
        <source>The model catalog cannot be read: {error}</source>
        <translation>无法读取模型目录：{error}</translation>
    </message>
</context>
<context>
    <name>ReasoningBlock</name>
    <message>
        <source>Copy thinking</source>
        <translation>复制思考过程</translation>
    </message>
    <message>
        <source>Copy the thinking as text</source>
        <translation>将思考过程复制为文本</translation>
    </message>
    <message>
        <source>Thinking…</source>
        <translation>思考中…</translation>
    </message>
    <message>
        <source>Thought for {time} · {tokens} tokens</source>
        <translation>已思考 {time} · {tokens} 个 token</translation>
    </message>
    <message>
        <source>Thought for {time}</source>
        <translation>已思考 {time}</translation>
    </message>
    <message>
        <source>Thought</source>
        <translation>已思考</translation>
    </message>
</context>
<context>
    <name>RecentModelsMenu</name>
    <message>
        <source>Recent &amp;models</source>
        <translation>最近使用的模型(&amp;M)</translation>
    </message>
    <message>
        <source>No models opened yet</source>
        <translation>还没有打开过模型</translation>
    </message>
    <message>
        <source>&amp;Clear the list</source>
        <translation>清空列表(&amp;C)</translation>
    </message>
</context>
<context>
    <name>RemoteServerBox</name>
    <message>
        <source>Remote server (vLLM, SGLang, glmdesk serve...)</source>
        <translation>远程服务器（vLLM、SGLang、glmdesk serve 等）</translation>
    </message>
    <message>
        <source>Optional; kept in the system keyring</source>
        <translation>可选；保存在系统密钥环中</translation>
    </message>
    <message>
        <source>Empty: the server&apos;s first model</source>
        <translation>留空：使用服务器的第一个模型</translation>
    </message>
    <message>
        <source>List models</source>
        <translation>列出模型</translation>
    </message>
    <message>
        <source>Server URL</source>
        <translation>服务器 URL</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Asking the server...</source>
        <translation>正在询问服务器…</translation>
    </message>
    <message>
        <source>1 model on this server.</source>
        <translation>此服务器上有 1 个模型。</translation>
    </message>
    <message>
        <source>{count} models on this server.</source>
        <translation>此服务器上有 {count} 个模型。</translation>
    </message>
</context>
<context>
    <name>SamplingBinding</name>
    <message>
        <source>{model} has no thinking switch (GLM-4.5/4.6/4.7 have one).</source>
        <translation>{model} 没有思考开关（GLM-4.5/4.6/4.7 有）。</translation>
    </message>
    <message>
        <source>{model} has no reasoning effort levels (GLM-5.2 and 5.3 have them).</source>
        <translation>{model} 没有推理强度等级（GLM-5.2 和 5.3 有）。</translation>
    </message>
</context>
<context>
    <name>SearchResultModel</name>
    <message>
        <source>Untitled</source>
        <translation>未命名对话</translation>
    </message>
</context>
<context>
    <name>ServeController</name>
    <message>
        <source>Serve on localhost:{port}</source>
        <extracomment>The port the toggle serves on (vLLM&apos;s and glmdesk serve&apos;s default).</extracomment>
        <translation>在 localhost:{port} 上提供服务</translation>
    </message>
    <message>
        <source>Serve the loaded model over an OpenAI-compatible API on this computer</source>
        <translation>在本机通过 OpenAI 兼容 API 提供已加载的模型</translation>
    </message>
    <message>
        <source>Not serving</source>
        <translation>未在提供服务</translation>
    </message>
    <message>
        <source>Load a model first; then it can be served.</source>
        <translation>请先加载模型，然后才能提供服务。</translation>
    </message>
    <message>
        <source>Could not serve on localhost:{port}: {reason}</source>
        <translation>无法在 localhost:{port} 上提供服务：{reason}</translation>
    </message>
    <message>
        <source>{count} request</source>
        <translation>{count} 个请求</translation>
    </message>
    <message>
        <source>{count} requests</source>
        <translation>{count} 个请求</translation>
    </message>
    <message>
        <source>Serving · {requests}</source>
        <translation>正在提供服务 · {requests}</translation>
    </message>
    <message>
        <source>Serving at {url}</source>
        <translation>正在 {url} 提供服务</translation>
    </message>
</context>
<context>
    <name>ServerDialog</name>
    <message>
        <source>MCP server</source>
        <translation>MCP 服务器</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Settings (JSON)</source>
        <translation>设置（JSON）</translation>
    </message>
    <message>
        <source>The settings are not valid JSON: {detail}</source>
        <translation>设置不是有效的 JSON：{detail}</translation>
    </message>
</context>
<context>
    <name>ShortcutsDialog</name>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <source>Send the message</source>
        <translation>发送消息</translation>
    </message>
    <message>
        <source>Enter</source>
        <translation>Enter</translation>
    </message>
    <message>
        <source>New line in the message</source>
        <translation>在消息中换行</translation>
    </message>
    <message>
        <source>Shift+Enter</source>
        <translation>Shift+Enter</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <source>Keys</source>
        <translation>按键</translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <source>0 means greedy: always the most likely token.</source>
        <translation>0 表示贪心解码：总是选择概率最高的 token。</translation>
    </message>
    <message>
        <source>Keep the smallest set of tokens whose probability adds up to this; 1 is off.</source>
        <translation>只保留累计概率达到该值的最小 token 集合；1 表示关闭。</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <source>Keep only the k most likely tokens; 0 is off.</source>
        <translation>只保留概率最高的 k 个 token；0 表示关闭。</translation>
    </message>
    <message>
        <source>Drop tokens less likely than this times the most likely one; 0 is off.</source>
        <translation>丢弃概率低于“最高概率 × 该值”的 token；0 表示关闭。</translation>
    </message>
    <message>
        <source>1.0 is off; higher values discourage repeating tokens.</source>
        <translation>1.0 表示关闭；数值越大，越抑制重复的 token。</translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> 个 token</translation>
    </message>
    <message>
        <source>random</source>
        <translation>随机</translation>
    </message>
    <message>
        <source>Empty: a new random seed for every answer. Read when an answer starts.</source>
        <translation>留空：每次回答使用新的随机种子。在回答开始时读取。</translation>
    </message>
    <message>
        <source>Model defaults</source>
        <translation>模型默认值</translation>
    </message>
    <message>
        <source>Use the model family&apos;s published demo settings</source>
        <translation>使用该模型系列官方演示的设置</translation>
    </message>
    <message>
        <source>Temperature</source>
        <extracomment>Kinds of sidebar control: a slider with a spin box, a spin box, a text entry (a whole number or empty, for optional fields). Fields of :class:`SamplingParams` that are not rows of the table: switches that are not numbers, each with its own control and request field (see its docstring). The sampling fields of :class:`~glmdesk.core.settings.SamplingParams`, in the sidebar&apos;s order.</extracomment>
        <translation>温度</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <source>Max new tokens</source>
        <translation>最大新 token 数</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <source>Thinking budget</source>
        <translation>思考预算</translation>
    </message>
    <message>
        <source>A reasoning model thinks at most this many tokens; then its thinking is closed and it answers. 0 is off.</source>
        <translation>推理模型最多思考这么多个 token，随后结束思考并作答。0 为关闭。</translation>
    </message>
    <message>
        <source>Applies from the next token, also to an answer being written. The seed applies from the next message.</source>
        <translation>从下一个 token 起生效，对正在生成的回答同样有效。随机种子从下一条消息起生效。</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <source>Optional instructions for the model</source>
        <translation>给模型的指令（可选）</translation>
    </message>
    <message>
        <source>Applies from the next message.</source>
        <translation>从下一条消息起生效。</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>Full (grows with the conversation)</source>
        <translation>完整（随对话增长）</translation>
    </message>
    <message>
        <source>Sliding window with attention sinks</source>
        <translation>滑动窗口 + 注意力汇聚 token</translation>
    </message>
    <message>
        <source>Dynamic (full, then window within a budget)</source>
        <translation>动态（先完整保留，接近预算时改用窗口）</translation>
    </message>
    <message>
        <source>Quantized</source>
        <translation>量化</translation>
    </message>
    <message>
        <source> MiB</source>
        <translation> MiB</translation>
    </message>
    <message>
        <source>automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <source>Window</source>
        <translation>窗口大小</translation>
    </message>
    <message>
        <source>Sinks</source>
        <translation>汇聚 token</translation>
    </message>
    <message>
        <source>Budget</source>
        <translation>内存预算</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Model, precision and quantization apply when a model is loaded: File &gt; Open model (Ctrl+O).</source>
        <translation>模型、精度和量化在加载模型时生效：文件 &gt; 打开模型（Ctrl+O）。</translation>
    </message>
    <message>
        <source>Applies from the next answer.</source>
        <translation>从下一次回答起生效。</translation>
    </message>
    <message>
        <source>Applies from the next answer: the settings go with each question, so an answer being written keeps the ones it started with.</source>
        <translation>从下一个回答起生效：这些设置随每个问题一起发送，正在生成的回答仍使用开始时的设置。</translation>
    </message>
    <message>
        <source>Applies from the next token, even mid-answer.</source>
        <translation>从下一个 token 起生效，生成中的回答也是。</translation>
    </message>
    <message>
        <source>{live} apply from the next token; the others from the next answer.</source>
        <translation>{live} 从下一个 token 起生效；其余从下一次回答起生效。</translation>
    </message>
    <message>
        <source>{live} apply from the next token, also to an answer being written; the others from the next answer.</source>
        <translation>{live} 从下一个 token 起生效，对正在生成的回答同样有效；其余设置从下一个回答起生效。</translation>
    </message>
    <message>
        <source>Repetition penalty {value} is refused: below 1.0 it would reward repetition. {kept} stays in force (1.0 is off).</source>
        <translation>重复惩罚 {value} 无效：低于 1.0 会鼓励重复。继续使用 {kept}（1.0 表示关闭）。</translation>
    </message>
    <message>
        <source>The seed must be at most {maximum}.</source>
        <translation>随机种子不能大于 {maximum}。</translation>
    </message>
    <message>
        <source>Not available in this build.</source>
        <translation>此版本不支持。</translation>
    </message>
    <message>
        <source>Attention sinks must be fewer than the window; the previous KV-cache settings stay in force.</source>
        <translation>注意力汇聚 token 数必须小于窗口大小；继续使用之前的 KV 缓存设置。</translation>
    </message>
    <message>
        <source>Interface</source>
        <translation>界面</translation>
    </message>
    <message>
        <source>System language</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>Takes effect after restarting glmdesk.</source>
        <translation>重启 glmdesk 后生效。</translation>
    </message>
    <message>
        <source>Advanced</source>
        <extracomment>Sections open at start, by their position (Sampling and System prompt).</extracomment>
        <translation>高级</translation>
    </message>
</context>
<context>
    <name>SourcesView</name>
    <message>
        <source>whole</source>
        <translation>整篇</translation>
    </message>
    <message>
        <source>{n} passages</source>
        <translation>{n} 个段落</translation>
    </message>
    <message>
        <source>, estimated</source>
        <translation>，估算</translation>
    </message>
    <message>
        <source>Sources ({how}, {tokens} tokens{counted}):</source>
        <translation>来源（{how}，{tokens} 个 token{counted}）：</translation>
    </message>
    <message>
        <source>Sources ({how}):</source>
        <translation>来源（{how}）：</translation>
    </message>
</context>
<context>
    <name>StatusBar</name>
    <message>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>{name} (embedded)</source>
        <translation>{name}（内置）</translation>
    </message>
    <message>
        <source>{name} · {family}</source>
        <translation>{name} · {family}</translation>
    </message>
    <message>
        <source>{device} · {weights}</source>
        <translation>{device} · {weights}</translation>
    </message>
    <message>
        <source>context {used} / {length}</source>
        <translation>上下文 {used} / {length}</translation>
    </message>
    <message>
        <source>KV cache: {held} of {seen} tokens held, {evicted} evicted</source>
        <translation>KV 缓存：保留 {held} / {seen} 个 token，已淘汰 {evicted} 个</translation>
    </message>
    <message>
        <source>TTFT {ttft} s, {rate} tokens/s</source>
        <translation>首 token 延迟 {ttft} 秒，{rate} token/秒</translation>
    </message>
</context>
<context>
    <name>ThinkingSwitch</name>
    <message>
        <source>Thinking</source>
        <translation>思考过程</translation>
    </message>
    <message>
        <source>Load a model first.</source>
        <translation>请先加载模型。</translation>
    </message>
    <message>
        <source>On: the model reasons first (shown as Thinking). Off: it answers at once. From the next answer.</source>
        <translation>开：模型先推理（显示为思考过程）。关：直接作答。从下一条回答起生效。</translation>
    </message>
</context>
<context>
    <name>ToolCallCard</name>
    <message>
        <source>Code interpreter</source>
        <translation>代码解释器</translation>
    </message>
    <message>
        <source>Tool call: {name}</source>
        <translation>工具调用：{name}</translation>
    </message>
    <message>
        <source>Type the tool&apos;s result here</source>
        <extracomment>Most lines the arguments (or code) box grows to; longer text scrolls inside it.</extracomment>
        <translation>在此输入工具的结果</translation>
    </message>
    <message>
        <source>Send result</source>
        <translation>发送结果</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Decline</source>
        <translation>拒绝</translation>
    </message>
    <message>
        <source>writing...</source>
        <translation>生成中…</translation>
    </message>
    <message>
        <source>running...</source>
        <translation>运行中…</translation>
    </message>
    <message>
        <source>asked after the call above</source>
        <translation>在上面的调用之后询问</translation>
    </message>
</context>
<context>
    <name>ToolController</name>
    <message>
        <source>Load a model first.</source>
        <extracomment>The chat&apos;s MCP servers and tools in the Tools section (``None``: no MCP).</extracomment>
        <translation>请先加载模型。</translation>
    </message>
    <message>
        <source>The code interpreter runs only with a local model: a server is not offered it (it has no OpenAI form). Custom functions are sent to the server.</source>
        <translation>代码解释器只能配合本地模型使用：不会提供给服务器（它没有 OpenAI 形式）。自定义函数会发送给服务器。</translation>
    </message>
    <message>
        <source>{model} has no tool-call format (ChatGLM3 and GLM-4 have one).</source>
        <translation>{model} 没有工具调用格式（ChatGLM3 和 GLM-4 有）。</translation>
    </message>
    <message>
        <source>The tools&apos; descriptions take about {tokens} tokens, {share} of the {context}-token context; turn off servers or tools this chat does not need.</source>
        <translation>工具说明约占 {tokens} 个 token，为 {context} token 上下文的 {share}；请关闭本对话不需要的服务器或工具。</translation>
    </message>
</context>
<context>
    <name>ToolsMemory</name>
    <message>
        <source>Tools</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>Code interpreter, {seconds} s per run</source>
        <translation>代码解释器，每次运行限时 {seconds} 秒</translation>
    </message>
    <message>
        <source>Custom functions</source>
        <translation>自定义函数</translation>
    </message>
    <message>
        <source>Custom functions, none offered (none is defined, or the definitions have problems)</source>
        <translation>自定义函数，未提供任何函数（没有定义，或定义有问题）</translation>
    </message>
    <message>
        <source>Up to {rounds} tool calls per message.</source>
        <translation>每条消息最多调用工具 {rounds} 次。</translation>
    </message>
    <message>
        <source>Untitled</source>
        <translation>未命名对话</translation>
    </message>
</context>
<context>
    <name>ToolsPanel</name>
    <message>
        <source>Tools</source>
        <extracomment>Modes of the section, in the order of the combo box.</extracomment>
        <translation>工具</translation>
    </message>
    <message>
        <source>None</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Code interpreter</source>
        <translation>代码解释器</translation>
    </message>
    <message>
        <source>Custom functions</source>
        <translation>自定义函数</translation>
    </message>
    <message>
        <source>A JSON list of function definitions, each with a name, a description and parameters.</source>
        <translation>函数定义的 JSON 列表：每个函数有名称、说明和参数。</translation>
    </message>
    <message>
        <source>Always run code in this conversation</source>
        <translation>在此对话中总是运行代码</translation>
    </message>
    <message>
        <source>Tool calls per message</source>
        <translation>每条消息的工具调用次数</translation>
    </message>
    <message>
        <source>Code time limit</source>
        <translation>代码运行时限</translation>
    </message>
    <message>
        <source>MCP servers in this chat</source>
        <translation>本对话使用的 MCP 服务器</translation>
    </message>
    <message>
        <source>The pasted text was not added: the definitions would be {length} characters, and they go into every prompt, so at most {limit} are taken.</source>
        <translation>粘贴的内容未添加：函数定义将达到 {length} 个字符，而它们会进入每一次提示，因此最多接受 {limit} 个字符。</translation>
    </message>
</context>
<context>
    <name>WelcomeWidget</name>
    <message>
        <source>Try one of these:</source>
        <translation>试试这些：</translation>
    </message>
    <message>
        <source>Send this message</source>
        <translation>发送这条消息</translation>
    </message>
    <message>
        <source>Send this prompt of an MCP server:
{text}</source>
        <translation>发送此 MCP 服务器的提示词：
{text}</translation>
    </message>
    <message>
        <source>Open another model...</source>
        <translation>打开其他模型…</translation>
    </message>
    <message>
        <source>A folder of ChatGLM2, ChatGLM3, GLM-4 or any Hugging Face chat model, or a .gguf file (Ctrl+O).</source>
        <translation>ChatGLM2、ChatGLM3、GLM-4 或任意 Hugging Face 对话模型的文件夹，或一个 .gguf 文件（Ctrl+O）。</translation>
    </message>
    <message>
        <source>What is the capital of Japan?</source>
        <translation>What is the capital of Japan?</translation>
    </message>
    <message>
        <source>Give me three tips for a good night&apos;s sleep.</source>
        <translation>Give me three tips for a good night&apos;s sleep.</translation>
    </message>
    <message>
        <source>Write a Python function that reverses a string.</source>
        <translation>Write a Python function that reverses a string.</translation>
    </message>
    <message>
        <source>Explain what a KV cache is in three sentences.</source>
        <translation>用三句话解释什么是 KV 缓存。</translation>
    </message>
    <message>
        <source>用三句话介绍一下长城。</source>
        <translation>用三句话介绍一下长城。</translation>
    </message>
    <message>
        <source>Write a Python function that checks whether a word is a palindrome.</source>
        <translation>写一个 Python 函数，判断一个单词是不是回文。</translation>
    </message>
    <message>
        <source>Welcome to glmdesk</source>
        <translation>欢迎使用 glmdesk</translation>
    </message>
    <message>
        <source>The model is loading; you can type meanwhile.</source>
        <translation>模型正在加载，你可以先输入。</translation>
    </message>
    <message>
        <source>Chat with {model}</source>
        <translation>与 {model} 对话</translation>
    </message>
    <message>
        <source>Answered by the server at {url} · context {context} tokens</source>
        <translation>由 {url} 上的服务器回答 · 上下文 {context} 个 token</translation>
    </message>
    <message>
        <source>{size} on {device} · {weights} · context {context} tokens</source>
        <translation>{size}，位于 {device} · {weights} · 上下文 {context} 个 token</translation>
    </message>
    <message>
        <source>{facts}
The small embedded model: fine for trying glmdesk; open a GLM model for real work.</source>
        <translation>{facts}
这是小型内置模型，适合试用 glmdesk；正式使用请打开 GLM 模型。</translation>
    </message>
</context>
<context>
    <name>_Plot</name>
    <message>
        <source>now</source>
        <extracomment>How often a remote server&apos;s ``/metrics`` is read, in s (vLLM refreshes it every few s).</extracomment>
        <translation>现在</translation>
    </message>
    <message>
        <source>{seconds} s ago</source>
        <translation>{seconds} 秒前</translation>
    </message>
    <message>
        <source>{when}
used {used}
weights {weights}
KV cache {kv}
other {other}</source>
        <translation>{when}
已用 {used}
权重 {weights}
KV 缓存 {kv}
其他 {other}</translation>
    </message>
    <message>
        <source>-60 s</source>
        <translation>-60 秒</translation>
    </message>
    <message>
        <source>-30 s</source>
        <translation>-30 秒</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>Starting glmdesk...</source>
        <translation>正在启动 glmdesk…</translation>
    </message>
    <message>
        <source>The chat history could not be opened ({detail}); this session will not be saved.</source>
        <translation>无法打开聊天记录（{detail}），本次会话不会被保存。</translation>
    </message>
</context>
<context>
    <name>model_facts</name>
    <message>
        <source>answered by the server</source>
        <translation>由服务器回答</translation>
    </message>
    <message>
        <source>{type} GGUF on llama.cpp</source>
        <translation>{type} GGUF，在 llama.cpp 上运行</translation>
    </message>
    <message>
        <source>4-bit weights (int4 weight-only), {dtype} compute</source>
        <translation>4 位权重（int4 仅权重量化），{dtype} 计算</translation>
    </message>
    <message>
        <source>8-bit weights (int8 weight-only), {dtype} compute</source>
        <translation>8 位权重（int8 仅权重量化），{dtype} 计算</translation>
    </message>
    <message>
        <source>4-bit weights (bitsandbytes NF4), {dtype} compute</source>
        <translation>4 位权重（bitsandbytes NF4），{dtype} 计算</translation>
    </message>
    <message>
        <source>8-bit weights (bitsandbytes LLM.int8), {dtype} compute</source>
        <translation>8 位权重（bitsandbytes LLM.int8），{dtype} 计算</translation>
    </message>
    <message>
        <source>{dtype} weights and compute</source>
        <translation>{dtype} 权重与计算</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>GPU {index}</source>
        <translation>GPU {index}</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
</context>
<context>
    <name>recent_models</name>
    <message>
        <source>Embedded model (SmolLM2-135M-Instruct)</source>
        <translation>内置模型（SmolLM2-135M-Instruct）</translation>
    </message>
</context>
<context>
    <name>theme</name>
    <message>
        <source>&amp;Theme</source>
        <extracomment>The user&apos;s choices, as stored in QSettings.</extracomment>
        <translation>主题(&amp;T)</translation>
    </message>
    <message>
        <source>Follow the &amp;system</source>
        <translation>跟随系统(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Light</source>
        <translation>浅色(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Dark</source>
        <translation>深色(&amp;D)</translation>
    </message>
</context>
</TS>
