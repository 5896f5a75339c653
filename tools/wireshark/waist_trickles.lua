-- waist_trickles.lua -- Wireshark dissector for Trickles (crates/trickles), the stateless
-- TCP-like transport: the server keeps no per-connection state; every request carries the
-- transport continuation (the server's TCP state, MACed) and the server's responses carry
-- the next ones.
--
-- What it dissects and how it registers: tools/wireshark/README.md ("waist_trickles.lua").
--
-- Field prefix: trickles. (trickles.msg, trickles.kind, trickles.tcont.seq, trickles.mac,
--   trickles.nonce, trickles.pkt, trickles.sack.left/right/nonce, trickles.ucont.kind, ...).
--   Every truncated or invalid field is flagged with an expert info item (trickles.expert.*),
--   never a Lua error.
--
-- Install: copy into ~/.local/lib/wireshark/plugins/ (Wireshark and tshark load it at
--   start), or load it once: tshark -X lua_script:waist_trickles.lua -r capture.pcap

local trickles = Proto("trickles", "Trickles")
local trickles_opt = Proto("trickles_option", "Trickles TCP option")

local TRICKLES_EXID = 0x5472
local CONTINUATION_LEN = 54
local SACK_BLOCK_LEN = 12
local RANGE_LEN = 10
local MAX_SACK = 64
local MAX_RANGES = 16

local request_kinds = { [1] = "SYN", [2] = "Request", [3] = "Timeout", [4] = "FIN" }
local response_kinds = { [1] = "Data", [2] = "Retransmit", [3] = "Reset" }
local epoch_starts = { [0] = "Open", [1] = "Recovery", [2] = "Timeout" }
local ucont_kinds = {
    [1] = "Input", [2] = "Output", [3] = "Opaque", [4] = "Bundle", [5] = "Overflow",
    [6] = "Output (follows)",
}

local F = ProtoField
local f = {
    opt_kind = F.uint8("trickles.option.kind", "Kind", base.DEC),
    opt_len = F.uint8("trickles.option.len", "Length", base.DEC),
    opt_exid = F.uint16("trickles.option.exid", "Experiment ID", base.HEX),

    msg = F.string("trickles.msg", "Message"),
    version = F.uint8("trickles.version", "Version", base.DEC),
    kind = F.uint8("trickles.kind", "Kind", base.DEC),
    flags = F.uint8("trickles.flags", "Flags", base.HEX),
    flag_fin = F.bool("trickles.flags.fin", "FIN after this request", 8, nil, 0x01),
    flag_doff = F.bool("trickles.flags.data_offset", "Data offset present", 8, nil, 0x02),
    flag_delta = F.bool("trickles.flags.delta", "Accepts delta continuations", 8, nil, 0x04),
    flag_dack = F.bool("trickles.flags.delayed_ack", "Asks for delayed acknowledgments", 8,
        nil, 0x08),
    rflag_cont = F.bool("trickles.flags.continuation", "Continuation present", 8, nil, 0x01),
    rflag_eos = F.bool("trickles.flags.eos", "End of stream", 8, nil, 0x02),
    rflag_delta = F.bool("trickles.flags.delta_present", "Delta continuation present", 8, nil,
        0x04),
    retry = F.uint8("trickles.retry", "Retry", base.DEC),
    sack_count = F.uint8("trickles.sack.count", "SACK blocks", base.DEC),
    range_count = F.uint8("trickles.ranges.count", "Byte ranges", base.DEC),
    ucont_len = F.uint16("trickles.ucont.len", "User continuation length", base.DEC),
    reserved = F.bytes("trickles.reserved", "Reserved"),
    pkt = F.uint32("trickles.pkt", "Packet number", base.DEC),
    nonce = F.uint32("trickles.nonce", "Packet nonce", base.HEX),
    offset = F.uint64("trickles.offset", "Stream offset", base.DEC),
    eos = F.uint8("trickles.eos", "End of stream", base.DEC),

    tcont = F.bytes("trickles.tcont", "Transport continuation"),
    t_seq = F.uint32("trickles.tcont.seq", "Number (request sequence)", base.DEC),
    t_base = F.uint32("trickles.tcont.tcp_base", "TCPBase", base.DEC),
    t_cwnd = F.uint16("trickles.tcont.start_cwnd", "startCwnd", base.DEC),
    t_ssthresh = F.uint16("trickles.tcont.ssthresh", "ssthresh", base.DEC),
    t_proof = F.uint32("trickles.tcont.proof_start", "Proof start", base.DEC),
    t_rtt = F.uint32("trickles.tcont.rtt_us", "RTT (us)", base.DEC),
    t_ts = F.uint32("trickles.tcont.timestamp_ms", "Timestamp (ms)", base.DEC),
    t_epoch = F.uint8("trickles.tcont.epoch_start", "Epoch start", base.DEC, epoch_starts),
    t_rtx = F.uint8("trickles.tcont.rtx", "Retransmit timeouts", base.DEC),
    t_site = F.uint16("trickles.tcont.site", "Site", base.DEC),
    t_key = F.uint8("trickles.tcont.key_epoch", "Key epoch", base.DEC),
    t_flags = F.uint8("trickles.tcont.flags", "Flags", base.HEX),
    t_flag_dack = F.bool("trickles.tcont.flags.delayed_ack", "Delayed acknowledgments", 8, nil,
        0x01),
    t_cnonce = F.uint64("trickles.tcont.conn_nonce", "Connection nonce", base.HEX),
    mac = F.bytes("trickles.mac", "MAC tag"),
    delta = F.bytes("trickles.delta", "Delta continuation"),
    delta_present = F.uint16("trickles.delta.present", "Fields present", base.HEX),

    sack = F.bytes("trickles.sack", "SACK proof"),
    sack_left = F.uint32("trickles.sack.left", "Left (first packet)", base.DEC),
    sack_right = F.uint32("trickles.sack.right", "Right (last packet)", base.DEC),
    sack_nonce = F.uint32("trickles.sack.nonce", "Range nonce", base.HEX),
    range_start = F.uint64("trickles.range.start", "Range start", base.DEC),
    range_len = F.uint16("trickles.range.len", "Range length", base.DEC),

    ucont = F.bytes("trickles.ucont", "User continuation"),
    u_kind = F.uint8("trickles.ucont.kind", "Kind", base.DEC, ucont_kinds),
    u_consumed = F.uint64("trickles.ucont.consumed", "Consumed", base.DEC),
    u_vstart = F.uint64("trickles.ucont.valid_start", "Valid start", base.DEC),
    u_vend = F.uint64("trickles.ucont.valid_end", "Valid end", base.DEC),
    u_skip = F.uint64("trickles.ucont.skip_to", "Skip to", base.DEC),
    u_follows = F.uint64("trickles.ucont.follows", "Follows", base.DEC),
    u_at = F.uint64("trickles.ucont.at", "Region ends at", base.DEC),
    u_body_len = F.uint16("trickles.ucont.body_len", "Body length", base.DEC),
    u_body = F.bytes("trickles.ucont.body", "Body"),
    u_mac = F.bytes("trickles.ucont.mac", "MAC tag"),
    u_count = F.uint8("trickles.ucont.bundle.count", "Members", base.DEC),
    u_member_len = F.uint16("trickles.ucont.bundle.len", "Member length", base.DEC),

    h_format = F.uint8("trickles.http.format", "Sealed answer format", base.DEC),
    h_status = F.uint16("trickles.http.status", "Status", base.DEC),
    h_flags = F.uint8("trickles.http.flags", "Flags (bit 0: HEAD, bit 1: dated)", base.HEX),
    h_id = F.uint64("trickles.http.id", "Object id", base.DEC),
    h_version = F.uint64("trickles.http.version", "Object version", base.DEC),
    h_objlen = F.uint64("trickles.http.object_len", "Object length", base.DEC),
    h_start = F.uint64("trickles.http.body_start", "Body start", base.DEC),
    h_end = F.uint64("trickles.http.body_end", "Body end", base.DEC),
    h_headlen = F.uint64("trickles.http.head_len", "Head length", base.DEC),
    h_date = F.uint64("trickles.http.date", "Date (seconds since 1970, UTC)", base.DEC),
    h_location = F.string("trickles.http.location", "Location"),

    data_offset = F.uint64("trickles.data_offset", "Data offset", base.DEC),
    data_len = F.uint32("trickles.data.len", "Data length", base.DEC),
    data = F.bytes("trickles.data", "Data"),
    -- The HTTP request a SYN carries, as text (the request line, then each header line).
    http_request = F.string("trickles.http.request", "HTTP request"),
    http_header = F.string("trickles.http.header", "Header"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
trickles.fields = fl
trickles_opt.fields = {}

-- Expert infos, in registration order: { key, abbreviation, summary, group, severity }.
local ex, experts = {}, {}
for _, e in ipairs({
    { "truncated", "trickles.expert.truncated", "Truncated", "MALFORMED", "ERROR" },
    { "version", "trickles.expert.version", "Unknown version", "MALFORMED", "ERROR" },
    { "kind", "trickles.expert.kind", "Unknown kind", "MALFORMED", "ERROR" },
    { "reserved", "trickles.expert.reserved", "Reserved bits or bytes set", "MALFORMED", "WARN" },
    { "count", "trickles.expert.count", "Count over the limit", "MALFORMED", "ERROR" },
    { "ucont", "trickles.expert.ucont", "User continuation not well formed", "MALFORMED", "WARN" },
    { "option", "trickles.expert.option", "Trickles option of the wrong length", "MALFORMED", "ERROR" },
    { "exid", "trickles.expert.exid", "Experimental option of another experiment", "PROTOCOL", "NOTE" },
}) do
    ex[e[1]] = ProtoExpert.new(e[2], e[3], expert.group[e[4]], expert.severity[e[5]])
    experts[#experts + 1] = ex[e[1]]
end
trickles.experts = experts

local tcp_seq_raw = Field.new("tcp.seq_raw")
local tcp_flags_syn = Field.new("tcp.flags.syn")
local tcp_srcport = Field.new("tcp.srcport")
local tcp_dstport = Field.new("tcp.dstport")

-- Frames (by number) whose TCP header carried our option.
local marked = {}

-- A cursor over a TvbRange that never reads past its end: `take(n)` returns the next n
-- bytes or nil (after flagging the truncation once on `item`).
local function cursor(buf, item)
    local c = { buf = buf, pos = 0, item = item, bad = false }
    function c.left() return buf:len() - c.pos end
    function c.take(n, what)
        if c.bad then return nil end
        if n < 0 or c.pos + n > buf:len() then
            c.bad = true
            item:add_proto_expert_info(ex.truncated, string.format(
                "Truncated: %s needs %d bytes at offset %d, %d left", what or "field", n, c.pos,
                buf:len() - c.pos))
            return nil
        end
        local r = (n == 0) and buf(c.pos, 0) or buf(c.pos, n)
        c.pos = c.pos + n
        return r
    end
    function c.rest()
        if c.pos >= buf:len() then return nil end
        local r = buf(c.pos)
        c.pos = buf:len()
        return r
    end
    return c
end

-- Adds field `fld` over the next `n` bytes of cursor `c` to `tree`; returns the range.
local function put(tree, c, fld, n, what)
    local r = c.take(n, what)
    if r then tree:add(fld, r) end
    return r
end

---------------------------------------------------------------------------------------
-- Transport continuation (54 bytes) and delta

local function dissect_continuation(c, tree)
    local r = c.take(CONTINUATION_LEN, "transport continuation")
    if not r then return nil end
    local t = tree:add(f.tcont, r)
    t:set_text("Transport continuation")
    local number = r(0, 4):uint()
    t:add(f.t_seq, r(0, 4))
    t:add(f.t_base, r(4, 4))
    t:add(f.t_cwnd, r(8, 2))
    t:add(f.t_ssthresh, r(10, 2))
    t:add(f.t_proof, r(12, 4))
    t:add(f.t_rtt, r(16, 4))
    t:add(f.t_ts, r(20, 4))
    local e = t:add(f.t_epoch, r(24, 1))
    if r(24, 1):uint() > 2 then
        e:add_proto_expert_info(ex.kind, "Unknown epoch start " .. r(24, 1):uint())
    end
    t:add(f.t_rtx, r(25, 1))
    t:add(f.t_site, r(26, 2))
    t:add(f.t_key, r(28, 1))
    local fi = t:add(f.t_flags, r(29, 1))
    fi:add(f.t_flag_dack, r(29, 1))
    if bit32.band(r(29, 1):uint(), 0xFE) ~= 0 then
        fi:add_proto_expert_info(ex.reserved, "Reserved continuation flags set")
    end
    t:add(f.t_cnonce, r(30, 8))
    t:add(f.mac, r(38, 16))
    t:append_text(string.format(": number %d, rtt %d us", number, r(16, 4):uint()))
    return number
end

-- Delta bits, in wire order after the bitmap, RTT and timestamp.
local delta_fields = {
    { 0x001, "t_seq", 4 }, { 0x002, "t_base", 4 }, { 0x004, "t_cwnd", 2 },
    { 0x008, "t_ssthresh", 2 }, { 0x010, "t_proof", 4 }, { 0x020, "t_epoch", 1 },
    { 0x040, "t_rtx", 1 }, { 0x080, "t_site", 2 }, { 0x100, "t_key", 1 },
    { 0x200, "t_cnonce", 8 },
}

local function dissect_delta(c, tree)
    local start = c.pos
    if c.left() < 2 then
        c.take(2, "delta bitmap")
        return
    end
    local t = tree:add(f.delta, c.buf(start, math.min(c.left(), 55)))
    t:set_text("Delta continuation")
    local pr = put(t, c, f.delta_present, 2, "delta bitmap")
    local present = pr:uint()
    if bit32.band(present, 0xFC00) ~= 0 then
        t:add_proto_expert_info(ex.reserved, string.format(
            "Reserved delta bits set: 0x%04x", present))
    end
    put(t, c, f.t_rtt, 4, "delta RTT")
    put(t, c, f.t_ts, 4, "delta timestamp")
    for _, d in ipairs(delta_fields) do
        if bit32.band(present, d[1]) ~= 0 then put(t, c, f[d[2]], d[3], "delta field") end
    end
    put(t, c, f.mac, 16, "delta tag")
    if not c.bad then t:set_len(c.pos - start) end
end

---------------------------------------------------------------------------------------
-- User continuations

-- LEB128, at most 10 bytes; returns value (UInt64), length, or nil.
local function varint(buf, pos)
    local n = UInt64(0)
    for i = 0, 9 do
        if pos + i >= buf:len() then return nil end
        local b = buf(pos + i, 1):uint()
        n = n + UInt64(bit32.band(b, 0x7f)):lshift(7 * i)
        if bit32.band(b, 0x80) == 0 then return n, i + 1 end
    end
    return nil
end

-- The HTTP application's sealed answer, if `app` is one: format 1 (status, flags, six
-- LEB128 numbers, nothing after) or 2 (the same, then the date if flag bit 1 is set, then
-- a 301's Location to the end).
local function dissect_http_answer(app, tree)
    if app:len() < 4 then return end
    local format = app(0, 1):uint()
    if format ~= 1 and format ~= 2 then return end
    local dated = format == 2 and bit32.band(app(3, 1):uint(), 2) ~= 0
    local count = dated and 7 or 6
    local pos = 4
    local vals = {}
    for i = 1, count do
        local v, n = varint(app, pos)
        if not v then return end
        vals[i] = { v, pos, n }
        pos = pos + n
    end
    local status = app(1, 2):uint()
    if pos ~= app:len() and not (format == 2 and status == 301) then return end
    local t = tree:add(trickles, app, "HTTP sealed answer")
    t:add(f.h_format, app(0, 1))
    t:add(f.h_status, app(1, 2))
    t:add(f.h_flags, app(3, 1))
    local names = { f.h_id, f.h_version, f.h_objlen, f.h_start, f.h_end, f.h_headlen, f.h_date }
    for i = 1, count do
        t:add(names[i], app(vals[i][2], vals[i][3]), vals[i][1])
    end
    if pos < app:len() then t:add(f.h_location, app(pos)) end
    t:append_text(string.format(": %d, bytes %s..%s", status,
        tostring(vals[4][1]), tostring(vals[5][1])))
end

local dissect_ucont

local function dissect_ucont_body(c, t, what)
    local lr = put(t, c, f.u_body_len, 2, what .. " length")
    if not lr then return nil end
    if lr:uint() > 1024 then
        t:add_proto_expert_info(ex.ucont, "Body longer than 1024 bytes")
    end
    local body = c.take(lr:uint(), what)
    if body and body:len() > 0 then t:add(f.u_body, body) end
    return body
end

-- One user continuation filling `buf` (a TvbRange).
dissect_ucont = function(buf, tree, depth)
    local t = tree:add(f.ucont, buf)
    t:set_text("User continuation")
    local c = cursor(buf, t)
    local kr = put(t, c, f.u_kind, 1, "user continuation kind")
    if not kr then return nil end
    local kind = kr:uint()
    t:append_text(": " .. (ucont_kinds[kind] or ("kind " .. kind)))
    if kind == 1 then
        put(t, c, f.u_consumed, 8, "consumed")
        dissect_ucont_body(c, t, "input state")
    elseif kind == 2 or kind == 6 then
        local s = put(t, c, f.u_vstart, 8, "valid start")
        local e = put(t, c, f.u_vend, 8, "valid end")
        local k = put(t, c, f.u_skip, 8, "skip to")
        if kind == 6 then put(t, c, f.u_follows, 8, "follows") end
        if s and e and k and (e:uint64() < s:uint64() or k:uint64() < e:uint64()) then
            t:add_proto_expert_info(ex.ucont, "Output range out of order")
        end
        local app = dissect_ucont_body(c, t, "application data")
        if app and app:len() > 0 then dissect_http_answer(app, t) end
    elseif kind == 5 then
        put(t, c, f.u_at, 8, "overflow at")
        dissect_ucont_body(c, t, "overflow state")
    elseif kind == 3 then
        dissect_ucont_body(c, t, "opaque body")
    elseif kind == 4 then
        local n = put(t, c, f.u_count, 1, "bundle count")
        if not n then return kind end
        for i = 1, n:uint() do
            local lr = put(t, c, f.u_member_len, 2, "bundle member length")
            if not lr then break end
            local m = c.take(lr:uint(), "bundle member")
            if not m then break end
            if m:len() > 0 and depth < 2 then dissect_ucont(m, t, depth + 1) end
        end
        if not c.bad and c.left() > 0 then
            t:add_proto_expert_info(ex.ucont, "Bytes after the bundle's members")
        end
        return kind
    else
        t:add_proto_expert_info(ex.ucont, "Unknown user continuation kind " .. kind)
        return kind
    end
    if not c.bad then
        local tag = c.take(16, "user continuation tag")
        if tag then t:add(f.u_mac, tag) end
        if not c.bad and c.left() > 0 then
            t:add_proto_expert_info(ex.ucont, "Bytes after the tag")
        end
    end
    return kind
end

---------------------------------------------------------------------------------------
-- Requests and responses

local function check_version(c, tree)
    local v = put(tree, c, f.version, 1, "version")
    if v and v:uint() ~= 1 then
        tree:add_proto_expert_info(ex.version, "Unknown Trickles version " .. v:uint())
        return false
    end
    return v ~= nil
end

-- What a request and a response start with: the message name, the version, the kind by
-- name. Returns the cursor, the info words so far and the kind (nil if cut short).
local function message_head(buf, tree, what, kinds)
    tree:add(f.msg, buf(0, 0), what)
    local c = cursor(buf, tree)
    local info = { "Trickles " .. what }
    if not check_version(c, tree) then return c, info, nil end
    local kr = c.take(1, "kind")
    if not kr then return c, info, nil end
    local kind = kr:uint()
    local kname = kinds[kind]
    if kname then
        tree:append_text(", " .. kname)
        tree:add(f.kind, kr):set_text("Kind: " .. kname .. " (" .. kind .. ")")
    else
        tree:add(f.kind, kr):add_proto_expert_info(ex.kind, "Unknown " .. what .. " kind " .. kind)
    end
    info[#info + 1] = kname or ("kind=" .. kind)
    return c, info, kind
end

-- The flags byte: its bit fields under one item, and an expert note when `bad(flags)`.
-- Returns the byte's range (nil if cut short) and its value (0 then).
local function flags_byte(c, tree, bits, bad, what)
    local flr = c.take(1, "flags")
    if not flr then return nil, 0 end
    local flags = flr:uint()
    local ft = tree:add(f.flags, flr)
    for _, bf in ipairs(bits) do ft:add(bf, flr) end
    if bad(flags) then
        ft:add_proto_expert_info(ex.reserved, string.format("%s 0x%02x", what, flags))
    end
    return flr, flags
end

-- The HTTP request a SYN's data carries, shown as text under an "HTTP request: <request
-- line>" item, one item per header line. Returns the request line, or nil when the data
-- is not text (then it stays bytes only).
local function dissect_http_request(d, tree)
    local s = d:raw()
    if s:find("[^\32-\126\r\n\t]") then return nil end
    local line = s:match("^[^\r\n]*")
    if line == "" then return nil end
    local ht = tree:add(f.http_request, d, line)
    local pos = #line
    while pos < #s do
        local stop = s:find("\n", pos + 1, true)
        local len = stop and (stop - pos) or (#s - pos)
        local text = (s:sub(pos + 1, pos + len):gsub("\r?\n$", ""))
        if text ~= "" then ht:add(f.http_header, d(pos, len), text) end
        pos = pos + len
    end
    return line
end

local function dissect_request(buf, pinfo, tree)
    local c, info, kind = message_head(buf, tree, "request", request_kinds)
    if not kind then return table.concat(info, " ") end
    local _, flags = flags_byte(c, tree, { f.flag_fin, f.flag_doff, f.flag_delta, f.flag_dack },
        function(x) return bit32.band(x, 0xF0) ~= 0 end, "Reserved flags")
    put(tree, c, f.retry, 1, "retry")
    local nb = put(tree, c, f.sack_count, 1, "SACK count")
    local nr = put(tree, c, f.range_count, 1, "range count")
    local ul = put(tree, c, f.ucont_len, 2, "user continuation length")
    if c.bad then
        info[#info + 1] = "[truncated]"
        return table.concat(info, " ")
    end
    local nblocks, nranges = nb:uint(), nr:uint()
    if nblocks > MAX_SACK then
        tree:add_proto_expert_info(ex.count, nblocks .. " SACK blocks, more than 64")
    end
    if nranges > MAX_RANGES then
        tree:add_proto_expert_info(ex.count, nranges .. " byte ranges, more than 16")
    end
    local seq = ""
    if kind ~= 1 then
        local number = dissect_continuation(c, tree)
        if number then seq = tostring(number) end
    end
    if kind ~= 1 then info[#info + 1] = "seq=" .. seq end
    if nblocks > 0 and not c.bad then
        local sr = c.take(nblocks * SACK_BLOCK_LEN, "SACK proof")
        if sr then
            local st = tree:add(f.sack, sr)
            st:set_text(string.format("SACK proof: %d block%s", nblocks,
                nblocks == 1 and "" or "s"))
            local parts = {}
            for i = 0, nblocks - 1 do
                local b = sr(i * SACK_BLOCK_LEN, SACK_BLOCK_LEN)
                local bt = st:add(trickles, b, string.format("Block %d: packets %d..%d", i,
                    b(0, 4):uint(), b(4, 4):uint()))
                bt:add(f.sack_left, b(0, 4))
                bt:add(f.sack_right, b(4, 4))
                bt:add(f.sack_nonce, b(8, 4))
                if b(0, 4):uint() > b(4, 4):uint() then
                    bt:add_proto_expert_info(ex.reserved, "Block ends before it starts")
                end
                parts[#parts + 1] = b(0, 4):uint() .. "-" .. b(4, 4):uint()
            end
            info[#info + 1] = "sack=" .. table.concat(parts, ",")
        end
    end
    if nranges > 0 and not c.bad then
        local parts = {}
        for _ = 1, nranges do
            local r = c.take(RANGE_LEN, "byte range")
            if not r then break end
            local rt = tree:add(trickles, r, string.format("Range: %s +%d",
                tostring(r(0, 8):uint64()), r(8, 2):uint()))
            rt:add(f.range_start, r(0, 8))
            rt:add(f.range_len, r(8, 2))
            parts[#parts + 1] = tostring(r(0, 8):uint64()) .. "+" .. r(8, 2):uint()
        end
        info[#info + 1] = "ranges=" .. table.concat(parts, ",")
    end
    if ul:uint() > 0 and not c.bad then
        local ur = c.take(ul:uint(), "user continuation")
        if ur then
            local k = dissect_ucont(ur, tree, 0)
            if k then info[#info + 1] = "ucont=" .. (ucont_kinds[k] or k) end
        end
    end
    if bit32.band(flags, 0x02) ~= 0 and not c.bad then
        put(tree, c, f.data_offset, 8, "data offset")
    end
    if not c.bad then
        local d = c.rest()
        if d then
            tree:add(f.data_len, d, d:len())
            tree:add(f.data, d)
            info[#info + 1] = "len=" .. d:len()
            local line = kind == 1 and dissect_http_request(d, tree)
            if line then info[#info + 1] = line end
        end
    end
    if c.bad then info[#info + 1] = "[truncated]" end
    return table.concat(info, " ")
end

local function dissect_response(buf, pinfo, tree)
    local c, info, kind = message_head(buf, tree, "response", response_kinds)
    if not kind then return table.concat(info, " ") end
    local flr, flags = flags_byte(c, tree, { f.rflag_cont, f.rflag_eos, f.rflag_delta },
        function(x) return bit32.band(x, 0xF8) ~= 0 or bit32.band(x, 0x05) == 0x05 end,
        "Bad flags")
    if flr then
        tree:add(f.eos, flr, bit32.rshift(bit32.band(flags, 0x02), 1)):set_generated()
    end
    local r1 = c.take(1, "reserved byte")
    if r1 and r1:uint() ~= 0 then
        tree:add(f.reserved, r1):add_proto_expert_info(ex.reserved, "Reserved byte set")
    end
    local pn = put(tree, c, f.pkt, 4, "packet number")
    local nn = put(tree, c, f.nonce, 4, "nonce")
    local off = put(tree, c, f.offset, 8, "offset")
    local ul = put(tree, c, f.ucont_len, 2, "user continuation length")
    local r2 = c.take(2, "reserved bytes")
    if r2 and r2:uint() ~= 0 then
        tree:add(f.reserved, r2):add_proto_expert_info(ex.reserved, "Reserved bytes set")
    end
    if pn then info[#info + 1] = "pkt=" .. pn:uint() end
    if nn then info[#info + 1] = string.format("nonce=0x%08x", nn:uint()) end
    if off then info[#info + 1] = "off=" .. tostring(off:uint64()) end
    if c.bad then
        info[#info + 1] = "[truncated]"
        return table.concat(info, " ")
    end
    if bit32.band(flags, 0x01) ~= 0 then
        local number = dissect_continuation(c, tree)
        if number then info[#info + 1] = "cont=" .. number end
    elseif bit32.band(flags, 0x04) ~= 0 then
        dissect_delta(c, tree)
        info[#info + 1] = "delta"
    end
    if ul:uint() > 0 and not c.bad then
        local ur = c.take(ul:uint(), "user continuation")
        if ur then
            local k = dissect_ucont(ur, tree, 0)
            if k then info[#info + 1] = "ucont=" .. (ucont_kinds[k] or k) end
        end
    end
    if not c.bad then
        local d = c.rest()
        if d then
            tree:add(f.data_len, d, d:len())
            tree:add(f.data, d)
            info[#info + 1] = "len=" .. d:len()
        end
    end
    if flags and bit32.band(flags, 0x02) ~= 0 then info[#info + 1] = "EOS" end
    if c.bad then info[#info + 1] = "[truncated]" end
    return table.concat(info, " ")
end

-- Whether `buf` is a request (strictly, as Request::parse would accept it) / a response.
local function valid_request(buf)
    local n = buf:len()
    if n < 8 or buf(0, 1):uint() ~= 1 then return false end
    local kind, flags = buf(1, 1):uint(), buf(2, 1):uint()
    if kind < 1 or kind > 4 or bit32.band(flags, 0xF0) ~= 0 then return false end
    local nb, nr, ul = buf(4, 1):uint(), buf(5, 1):uint(), buf(6, 2):uint()
    if nb > MAX_SACK or nr > MAX_RANGES then return false end
    local need = 8 + nb * SACK_BLOCK_LEN + nr * RANGE_LEN + ul
    if kind ~= 1 then
        need = need + CONTINUATION_LEN
        if n < 8 + CONTINUATION_LEN then return false end
        if buf(8 + 24, 1):uint() > 2 or buf(8 + 29, 1):uint() > 1 then return false end
    end
    if bit32.band(flags, 0x02) ~= 0 then need = need + 8 end
    return n >= need
end

local function valid_response(buf)
    local n = buf:len()
    if n < 24 or buf(0, 1):uint() ~= 1 then return false end
    local kind, flags = buf(1, 1):uint(), buf(2, 1):uint()
    if kind < 1 or kind > 3 or bit32.band(flags, 0xF8) ~= 0 then return false end
    if bit32.band(flags, 0x05) == 0x05 then return false end
    if buf(3, 1):uint() ~= 0 or buf(22, 2):uint() ~= 0 then return false end
    local need = 24 + buf(20, 2):uint()
    if bit32.band(flags, 0x01) ~= 0 then
        need = need + CONTINUATION_LEN
        if n >= 24 + CONTINUATION_LEN and
            (buf(24 + 24, 1):uint() > 2 or buf(24 + 29, 1):uint() > 1) then
            return false
        end
    elseif bit32.band(flags, 0x04) ~= 0 then
        need = need + 26
    end
    return n >= need
end

local function first_value(field)
    local v = { field() }
    local x = v[#v]
    if x == nil then return nil end
    return x.value
end

local function is_request(buf)
    local syn = first_value(tcp_flags_syn)
    if syn == true or syn == 1 then return true end
    local rq, rs = valid_request(buf), valid_response(buf)
    if rq ~= rs then return rq end
    local seq = first_value(tcp_seq_raw)
    if seq then
        local rq_seq = buf:len() >= 12 and buf(8, 4):uint() == seq
        local rs_seq = buf:len() >= 8 and buf(4, 4):uint() == seq
        if rq_seq ~= rs_seq then return rq_seq end
    end
    local sp, dp = first_value(tcp_srcport), first_value(tcp_dstport)
    if sp and dp then return dp < sp end
    return true
end

-- Frames (by number) whose Trickles message this dissector has shown.
local done = {}

local function dissect_message(tvb, pinfo, tree)
    local len = tvb:len()
    if len == 0 then return 0 end
    done[pinfo.number] = true
    pinfo.cols.protocol = "Trickles"
    local buf = tvb()
    local t = tree:add(trickles, buf)
    local info
    if is_request(buf) then
        t:append_text(" Request")
        info = dissect_request(buf, pinfo, t)
    else
        t:append_text(" Response")
        info = dissect_response(buf, pinfo, t)
    end
    pinfo.cols.info = info
    return len
end

function trickles.dissector(tvb, pinfo, tree)
    return dissect_message(tvb, pinfo, tree)
end

-- A new capture file: forget the frames of the last one.
function trickles.init()
    marked = {}
    done = {}
end

-- Wireshark's own handler of kind 253 (RFC 6994 experiments), for other experiments' ExIDs.
local option_table = DissectorTable.get("tcp.option")
local generic_exp = option_table:get_dissector(253)

function trickles_opt.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    if len >= 4 and tvb(2, 2):uint() ~= TRICKLES_EXID and generic_exp then
        -- Another experiment: as Wireshark shows it (an exception there is flagged, not
        -- raised as a Lua error).
        local ok = pcall(generic_exp.call, generic_exp, tvb, pinfo, tree)
        if not ok then
            tree:add(trickles_opt, tvb()):add_proto_expert_info(ex.option,
                "Wireshark's experimental-option dissector failed on this option")
        end
        return len
    end
    local t = tree:add(trickles_opt, tvb())
    if len < 2 then
        t:add_proto_expert_info(ex.option, "Option shorter than its kind and length")
        return len
    end
    t:add(f.opt_kind, tvb(0, 1))
    t:add(f.opt_len, tvb(1, 1))
    if len < 4 then
        t:add_proto_expert_info(ex.option, "No experiment ID")
        return len
    end
    local exid = tvb(2, 2):uint()
    t:add(f.opt_exid, tvb(2, 2))
    if exid ~= TRICKLES_EXID then
        t:set_text(string.format("Experimental option, ExID 0x%04x (not Trickles)", exid))
        t:add_proto_expert_info(ex.exid)
        return len
    end
    t:set_text("Trickles (kind 253, ExID \"Tr\")")
    if tvb(1, 1):uint() ~= 4 or len ~= 4 then
        t:add_proto_expert_info(ex.option, "Trickles option length " .. tvb(1, 1):uint() ..
            ", not 4")
    end
    marked[pinfo.number] = true
    pinfo.conversation = trickles
    return len
end

-- TCP does not hand a segment it takes for a retransmission or an out-of-order segment to
-- any subdissector, and Trickles segments look like that to it (their sequence numbers
-- count packets, not bytes). A postdissector picks those payloads up: any frame whose
-- Trickles option was seen and whose message was not shown yet.
local trickles_post = Proto("trickles_post", "Trickles (TCP payloads TCP kept back)")
local tcp_payload = Field.new("tcp.payload")

function trickles_post.dissector(tvb, pinfo, tree)
    if not marked[pinfo.number] or done[pinfo.number] then return end
    local all = { tcp_payload() }
    local fi = all[#all]
    if fi == nil or fi.len == 0 then return end
    -- TCP's "[TCP Retransmission]" is fenced in the info column; Trickles' own summary
    -- replaces it (the TCP tree still shows the analysis).
    pinfo.cols.info:clear_fence()
    pinfo.cols.protocol:clear_fence()
    dissect_message(fi.range:tvb(), pinfo, tree)
end

option_table:add(253, trickles_opt)
register_postdissector(trickles_post)
