-- waist_shim.lua -- Wireshark dissector for the waist router node's link frame
-- (crates/node/src/frame.rs): what one datagram of a UDP link, one read of a TUN device,
-- and one record of a daemon's capture (LINKTYPE_RAW, services/netio/src/pcap.rs) carry.
--
--   first nibble 4 or 6   a plain IP packet, whole             -> Wireshark's ip / ipv6
--   0xF1                  [0xF1][label, 4 bytes][IP packet]    -> the label, then ip / ipv6
--   0xF2                  [0xF2][distance-vector message]      -> the message, entry by entry
--
-- The label (crates/fastpath/src/threaded.rs) is one big-endian word: bit 31 random
-- (source-hash) index, bits 30..24 hop limit, bits 23..0 index. The distance-vector message
-- (crates/fastpath/src/dv/wire.rs): version, kind, entry count, sender id; then router
-- entries of 12 bytes (destination, cost, reserved, index) for kinds 1-4 or prefix entries
-- of 24 bytes (family, length, cost, index, 16 address bytes) for kinds 5-7.
--
-- How it registers
--   * DissectorTable "wtap_encap" for raw IP (wtap_encaps.RAW_IP, LINKTYPE_RAW), replacing
--     Wireshark's raw-IP dissector: plain IPv4/IPv6 go to Wireshark's "ip"/"ipv6" (so the
--     protocol chain of a plain packet reads waist:ip:..., not raw:ip:...), shims are
--     dissected here, and anything else goes to the replaced raw dissector as before.
--   * A heuristic on "udp" for UDP links and IP-in-UDP tunnels (the router's UDP links,
--     trickles-web's UDP link): it claims a datagram only when it is a plausible frame --
--     0xF1 with a valid IPv4/IPv6 header right after the label, 0xF2 with a valid
--     distance-vector message, or a whole IPv4 (header checksum right) / IPv6 packet whose
--     length is exactly the datagram's -- so ordinary UDP is left alone.
--
-- Field prefix: waist. (waist.shim.kind, waist.label, waist.label.random,
--   waist.label.hop_limit, waist.label.index, waist.dv.version/kind/count/sender, and per
--   entry waist.dv.dest, waist.dv.cost, waist.dv.index, waist.dv.family,
--   waist.dv.prefix_len, waist.dv.prefix4 / waist.dv.prefix6). Truncated or invalid fields
--   are flagged with expert info items (waist.expert.*), never a Lua error.
--
-- Install: copy into ~/.local/lib/wireshark/plugins/ (Wireshark and tshark load it at
--   start), or load it once: tshark -X lua_script:waist_shim.lua -r capture.pcap

local waist = Proto("waist", "Waist link frame")

local KIND_LABEL = 0xF1
local KIND_ROUTING = 0xF2
local DV_HEADER_LEN = 8
local DV_ENTRY_LEN = 12
local DV_PREFIX_ENTRY_LEN = 24

local shim_kinds = { [KIND_LABEL] = "Threaded label", [KIND_ROUTING] = "Routing message" }
local dv_kinds = {
    [1] = "Update", [2] = "Request", [3] = "Index query", [4] = "Index answer",
    [5] = "Prefix update", [6] = "Address query", [7] = "Address answer",
}
local families = { [1] = "IPv4", [2] = "IPv6" }

local F = ProtoField
local f = {
    kind = F.uint8("waist.shim.kind", "Shim kind", base.HEX, shim_kinds),
    ip_version = F.uint8("waist.ip_version", "Plain IP packet, version", base.DEC, nil, 0xF0),
    label = F.uint32("waist.label", "Label", base.HEX),
    random = F.bool("waist.label.random", "Random (source-hash) index", 32, nil, 0x80000000),
    hop_limit = F.uint32("waist.label.hop_limit", "Hop limit", base.DEC, nil, 0x7F000000),
    index = F.uint32("waist.label.index", "Index", base.DEC, nil, 0x00FFFFFF),
    dv = F.bytes("waist.dv", "Distance-vector message"),
    dv_version = F.uint8("waist.dv.version", "Version", base.DEC),
    dv_kind = F.uint8("waist.dv.kind", "Kind", base.DEC, dv_kinds),
    dv_count = F.uint16("waist.dv.count", "Entries", base.DEC),
    dv_sender = F.ipv4("waist.dv.sender", "Sender"),
    dv_entry = F.bytes("waist.dv.entry", "Entry"),
    dv_dest = F.ipv4("waist.dv.dest", "Destination router"),
    dv_cost = F.uint16("waist.dv.cost", "Cost", base.DEC),
    dv_reserved = F.uint16("waist.dv.reserved", "Reserved", base.HEX),
    dv_index = F.uint32("waist.dv.index", "Index", base.DEC),
    dv_family = F.uint8("waist.dv.family", "Family", base.DEC, families),
    dv_plen = F.uint8("waist.dv.prefix_len", "Prefix length", base.DEC),
    dv_prefix4 = F.ipv4("waist.dv.prefix4", "Prefix"),
    dv_prefix6 = F.ipv6("waist.dv.prefix6", "Prefix"),
    dv_padding = F.bytes("waist.dv.padding", "Padding"),
    dv_addr = F.bytes("waist.dv.address", "Address bytes"),
    trailing = F.bytes("waist.trailing", "Trailing bytes"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
waist.fields = fl

-- Expert infos, in registration order: { key, abbreviation, summary, group, severity }.
local ex, experts = {}, {}
for _, e in ipairs({
    { "truncated", "waist.expert.truncated", "Truncated", "MALFORMED", "ERROR" },
    { "kind", "waist.expert.kind", "Unknown kind", "MALFORMED", "ERROR" },
    { "version", "waist.expert.version", "Unknown version", "MALFORMED", "ERROR" },
    { "invalid", "waist.expert.invalid", "Invalid field", "MALFORMED", "WARN" },
    { "length", "waist.expert.length", "Length does not match", "MALFORMED", "ERROR" },
    { "not_ip", "waist.expert.not_ip", "No IP packet after the label", "MALFORMED", "WARN" },
    { "hop", "waist.expert.hop_limit", "Hop limit exhausted", "SEQUENCE", "NOTE" },
    { "inner", "waist.expert.inner", "The inner packet's dissection failed", "MALFORMED", "ERROR" },
}) do
    ex[e[1]] = ProtoExpert.new(e[2], e[3], expert.group[e[4]], expert.severity[e[5]])
    experts[#experts + 1] = ex[e[1]]
end
waist.experts = experts

local ip = Dissector.get("ip")
local ipv6 = Dissector.get("ipv6")
local data = Dissector.get("data")
local encap = DissectorTable.get("wtap_encap")
local raw = encap:get_dissector(wtap_encaps.RAW_IP)

---------------------------------------------------------------------------------------
-- Plausibility (the UDP heuristic's test)

-- Whether tvb bytes [off, end) are one whole IP packet: IPv4 with IHL >= 5, total length
-- exactly the bytes, header checksum right; or IPv6 with payload length + 40 exactly the
-- bytes.
local function whole_ip(tvb, off)
    local n = tvb:len() - off
    if n < 1 then return false end
    local v = bit32.rshift(tvb(off, 1):uint(), 4)
    if v == 4 then
        if n < 20 then return false end
        local ihl = bit32.band(tvb(off, 1):uint(), 0x0F) * 4
        if ihl < 20 or ihl > n or tvb(off + 2, 2):uint() ~= n then return false end
        local sum = 0
        for i = 0, ihl - 2, 2 do sum = sum + tvb(off + i, 2):uint() end
        while sum > 0xFFFF do sum = bit32.band(sum, 0xFFFF) + bit32.rshift(sum, 16) end
        return sum == 0xFFFF
    elseif v == 6 then
        return n >= 40 and tvb(off + 4, 2):uint() + 40 == n
    end
    return false
end

-- Whether tvb bytes [off, end) are one valid distance-vector message (dv::wire's checks:
-- version, kind, exact length, no entries in a request, reserved zero, 24-bit indices,
-- known families, prefix lengths in range).
local function valid_dv(tvb, off)
    local n = tvb:len() - off
    if n < DV_HEADER_LEN or tvb(off, 1):uint() ~= 1 then return false end
    local kind, count = tvb(off + 1, 1):uint(), tvb(off + 2, 2):uint()
    if kind < 1 or kind > 7 or (kind == 2 and count ~= 0) then return false end
    local elen = kind >= 5 and DV_PREFIX_ENTRY_LEN or DV_ENTRY_LEN
    if n ~= DV_HEADER_LEN + count * elen then return false end
    for i = 0, count - 1 do
        local e = off + DV_HEADER_LEN + i * elen
        if kind >= 5 then
            local fam, plen = tvb(e, 1):uint(), tvb(e + 1, 1):uint()
            if tvb(e + 4, 1):uint() ~= 0 then return false end
            if not ((fam == 1 and plen <= 32) or (fam == 2 and plen <= 128)) then
                return false
            end
        else
            if tvb(e + 6, 2):uint() ~= 0 or tvb(e + 8, 1):uint() ~= 0 then return false end
        end
    end
    return true
end

local function plausible(tvb)
    local n = tvb:len()
    if n < 1 then return false end
    local first = tvb(0, 1):uint()
    if first == KIND_LABEL then
        return n >= 5 and whole_ip(tvb, 5)
    elseif first == KIND_ROUTING then
        return valid_dv(tvb, 1)
    end
    return whole_ip(tvb, 0)
end

---------------------------------------------------------------------------------------
-- Dissection

-- Calls Wireshark dissector `d`. An exception inside it (a malformed inner packet) would
-- reach this script as a Lua error; it is caught and flagged on `item` (or a new waist
-- item) instead.
local function call(d, tvb, pinfo, tree, item)
    local ok, err = pcall(d.call, d, tvb, pinfo, tree)
    if ok then return err or tvb:len() end
    local msg = tostring(err):gsub("^.-Dissector_call: ", "")
    item = item or tree:add(waist, tvb())
    item:add_proto_expert_info(ex.inner, "The inner packet's dissection failed: " .. msg)
    return tvb:len()
end

-- Hands bytes [off, end) to ip / ipv6 by their first nibble; flags anything else.
local function inner_ip(tvb, off, pinfo, tree, item)
    if off >= tvb:len() then
        item:add_proto_expert_info(ex.not_ip, "No packet after the label")
        return
    end
    local v = bit32.rshift(tvb(off, 1):uint(), 4)
    local rest = tvb(off):tvb()
    if v == 4 then
        call(ip, rest, pinfo, tree, item)
    elseif v == 6 then
        call(ipv6, rest, pinfo, tree, item)
    else
        item:add_proto_expert_info(ex.not_ip, string.format(
            "First nibble %d after the label: not IPv4 or IPv6", v))
        call(data, rest, pinfo, tree, item)
    end
end

local function dissect_label(tvb, pinfo, tree)
    local t = tree:add(waist, tvb(0, math.min(tvb:len(), 5)))
    t:add(f.kind, tvb(0, 1))
    if tvb:len() < 5 then
        t:set_text("Waist threaded label shim [truncated]")
        t:add_proto_expert_info(ex.truncated, string.format(
            "Truncated: the label needs 4 bytes, %d left", tvb:len() - 1))
        pinfo.cols.info = "Waist label [truncated]"
        return
    end
    local word = tvb(1, 4):uint()
    local random = bit32.band(word, 0x80000000) ~= 0
    local hop = bit32.band(bit32.rshift(word, 24), 0x7F)
    local index = bit32.band(word, 0x00FFFFFF)
    local lt = t:add(f.label, tvb(1, 4))
    lt:add(f.random, tvb(1, 4))
    local h = lt:add(f.hop_limit, tvb(1, 4))
    lt:add(f.index, tvb(1, 4))
    if hop == 0 then h:add_proto_expert_info(ex.hop, "Hop limit 0: the next router drops it") end
    local summary = string.format("Waist label %s index=%d hop_limit=%d",
        random and "random" or "threaded", index, hop)
    t:set_text("Waist threaded label shim, " .. string.format("%s index %d, hop limit %d",
        random and "random" or "threaded", index, hop))
    pinfo.cols.info = summary .. ", "
    pinfo.cols.info:fence()
    inner_ip(tvb, 5, pinfo, tree, t)
end

-- Flags on `item` the host bits of an address (bytes `a`, `alen` long) past `plen`.
local function host_bits_set(a, alen, plen)
    for i = 0, alen - 1 do
        local keep = plen - 8 * i
        local b = a(i, 1):uint()
        if keep <= 0 then
            if b ~= 0 then return true end
        elseif keep < 8 then
            if bit32.band(b, bit32.rshift(0xFF, keep)) ~= 0 then return true end
        end
    end
    return false
end

local function dissect_router_entry(e, et, kind)
    local dest, cost, index = e(0, 4):uint(), e(4, 2):uint(), e(8, 4):uint()
    et:add(f.dv_dest, e(0, 4))
    et:add(f.dv_cost, e(4, 2))
    local r = et:add(f.dv_reserved, e(6, 2))
    if e(6, 2):uint() ~= 0 then r:add_proto_expert_info(ex.invalid, "Reserved not zero") end
    local it = et:add(f.dv_index, e(8, 4))
    if index > 0xFFFFFF then
        it:add_proto_expert_info(ex.invalid, "Index does not fit in 24 bits")
    end
    et:set_text(string.format("Router %d: cost %d%s, index %d", dest, cost,
        cost == 0xFFFF and " (unreachable)" or "", index))
end

local function dissect_prefix_entry(e, et, kind)
    local fam, plen, cost, index = e(0, 1):uint(), e(1, 1):uint(), e(2, 2):uint(),
        e(4, 4):uint()
    local ft = et:add(f.dv_family, e(0, 1))
    local pt = et:add(f.dv_plen, e(1, 1))
    et:add(f.dv_cost, e(2, 2))
    local it = et:add(f.dv_index, e(4, 4))
    if index > 0xFFFFFF then
        it:add_proto_expert_info(ex.invalid, "Index does not fit in 24 bits")
    end
    local text
    if fam == 1 then
        et:add(f.dv_prefix4, e(8, 4))
        local pad = et:add(f.dv_padding, e(12, 12))
        for i = 12, 23 do
            if e(i, 1):uint() ~= 0 then
                pad:add_proto_expert_info(ex.invalid, "IPv4 padding not zero")
                break
            end
        end
        if plen > 32 then
            pt:add_proto_expert_info(ex.invalid, "IPv4 prefix longer than 32")
        elseif host_bits_set(e(8, 4), 4, plen) then
            et:add_proto_expert_info(ex.invalid, "Bits set past the prefix length")
        end
        text = string.format("%s/%d", e(8, 4):ipv4(), plen)
    elseif fam == 2 then
        et:add(f.dv_prefix6, e(8, 16))
        if plen > 128 then
            pt:add_proto_expert_info(ex.invalid, "IPv6 prefix longer than 128")
        elseif host_bits_set(e(8, 16), 16, plen) then
            et:add_proto_expert_info(ex.invalid, "Bits set past the prefix length")
        end
        text = string.format("%s/%d", e(8, 16):ipv6(), plen)
    else
        ft:add_proto_expert_info(ex.invalid, "Unknown address family " .. fam)
        et:add(f.dv_addr, e(8, 16))
        text = "family " .. fam
    end
    if kind == 6 and ((fam == 1 and plen ~= 32) or (fam == 2 and plen ~= 128)) then
        pt:add_proto_expert_info(ex.invalid, "An address query names a full-length address")
    end
    et:set_text(string.format("Prefix %s: cost %d%s, index %d", text, cost,
        cost == 0xFFFF and " (unreachable)" or "", index))
end

local function dissect_routing(tvb, pinfo, tree)
    local t = tree:add(waist, tvb())
    t:set_text("Waist routing message")
    t:add(f.kind, tvb(0, 1))
    local n = tvb:len() - 1
    if n < DV_HEADER_LEN then
        if n > 0 then t:add(f.dv, tvb(1)) end
        t:add_proto_expert_info(ex.truncated, string.format(
            "Truncated: the distance-vector header needs 8 bytes, %d left", n))
        pinfo.cols.info = "Waist routing message [truncated]"
        return
    end
    local m = tvb(1)
    local dt = t:add(f.dv, m)
    dt:set_text("Distance-vector message")
    local vt = dt:add(f.dv_version, m(0, 1))
    if m(0, 1):uint() ~= 1 then
        vt:add_proto_expert_info(ex.version, "Unknown version " .. m(0, 1):uint())
    end
    local kind = m(1, 1):uint()
    local kt = dt:add(f.dv_kind, m(1, 1))
    local count = m(2, 2):uint()
    dt:add(f.dv_count, m(2, 2))
    dt:add(f.dv_sender, m(4, 4))
    local kname = dv_kinds[kind]
    -- A router id is the router's IPv4 address (distance vector names routers by it).
    local sender = tostring(m(4, 4):ipv4())
    pinfo.cols.info = string.format("Waist routing %s from %s, %d entr%s",
        kname or ("kind " .. kind), sender, count, count == 1 and "y" or "ies")
    dt:append_text(string.format(": %s from %s, %d entries", kname or ("kind " .. kind),
        sender, count))
    if not kname then
        kt:add_proto_expert_info(ex.kind, "Unknown message kind " .. kind)
        if n > DV_HEADER_LEN then dt:add(f.trailing, m(DV_HEADER_LEN)) end
        return
    end
    if kind == 2 and count ~= 0 then
        dt:add_proto_expert_info(ex.invalid, "A request with entries")
    end
    local elen = kind >= 5 and DV_PREFIX_ENTRY_LEN or DV_ENTRY_LEN
    local have = math.floor((n - DV_HEADER_LEN) / elen)
    for i = 0, math.min(count, have) - 1 do
        local e = m(DV_HEADER_LEN + i * elen, elen)
        local et = dt:add(f.dv_entry, e)
        if kind >= 5 then
            dissect_prefix_entry(e, et, kind)
        else
            dissect_router_entry(e, et, kind)
        end
    end
    local need = DV_HEADER_LEN + count * elen
    if n < need then
        dt:add_proto_expert_info(ex.truncated, string.format(
            "Truncated: %d entries need %d bytes, %d present", count, need, n))
        pinfo.cols.info:append(" [truncated]")
    elseif n > need then
        dt:add(f.trailing, m(need)):add_proto_expert_info(ex.length,
            string.format("%d bytes after the last entry", n - need))
    end
end

-- One frame. `fallback` handles what is neither IP nor a shim (the raw dissector for a
-- capture record; nil in a UDP datagram, which also gets an item saying the datagram is a
-- whole IP packet); returns the bytes consumed.
local function dissect_frame(tvb, pinfo, tree, fallback)
    local n = tvb:len()
    if n == 0 then
        tree:add(waist, tvb()):add_proto_expert_info(ex.truncated, "Empty frame")
        return 0
    end
    local first = tvb(0, 1):uint()
    local nibble = bit32.rshift(first, 4)
    if (nibble == 4 or nibble == 6) and not fallback then
        local t = tree:add(waist, tvb(0, 1))
        t:set_text(string.format("Waist link frame: a whole IPv%d packet", nibble))
        t:add(f.ip_version, tvb(0, 1))
    end
    if nibble == 4 then
        call(ip, tvb, pinfo, tree)
    elseif nibble == 6 then
        call(ipv6, tvb, pinfo, tree)
    elseif first == KIND_LABEL then
        pinfo.cols.protocol = "Waist"
        dissect_label(tvb, pinfo, tree)
    elseif first == KIND_ROUTING then
        pinfo.cols.protocol = "Waist"
        dissect_routing(tvb, pinfo, tree)
    elseif nibble == 0xF then
        pinfo.cols.protocol = "Waist"
        local t = tree:add(waist, tvb())
        t:add(f.kind, tvb(0, 1))
        t:add_proto_expert_info(ex.kind, string.format("Unknown shim kind 0x%02x", first))
        pinfo.cols.info = string.format("Waist shim of unknown kind 0x%02x", first)
        if n > 1 then call(data, tvb(1):tvb(), pinfo, tree, t) end
    elseif fallback then
        return call(fallback, tvb, pinfo, tree)
    else
        call(data, tvb, pinfo, tree)
    end
    return n
end

function waist.dissector(tvb, pinfo, tree)
    return dissect_frame(tvb, pinfo, tree, raw)
end

local function heuristic(tvb, pinfo, tree)
    if not plausible(tvb) then return false end
    dissect_frame(tvb, pinfo, tree, nil)
    return true
end

encap:add(wtap_encaps.RAW_IP, waist)
waist:register_heuristic("udp", heuristic)
