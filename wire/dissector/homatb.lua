-- homatb.lua: a Wireshark dissector for homatb's packets (IPv4 protocol 146).
--
-- homatb's Homa, pFabric, pHost and NDP share Homa's wire format (the Linux
-- HomaModule layout) with homatb's additions: START_MSG (0x19), NDP's PULL
-- (0x1a) and NACK (0x1b), pFabric's rank in common-header bytes 16..19, the
-- switch's trimmed flag in byte 8 and DATA's incast flag in byte 49. The
-- layout is declared in homatb's wire package; the offsets
-- below follow it, and the tests beside this file (fields_test.go) run
-- tshark with it over packets the package encodes and compare every field
-- with the package's decoding.
--
-- Use: tshark -X lua_script:homatb.lua -r capture.pcapng
--      or copy this file into ~/.local/lib/wireshark/plugins
--      (homatb dissector --install). Fields are named homatb.*; see
--      docs/dissector.md in the homatb repository.

-- Loaded twice (installed as a plugin and named with -X lua_script), the
-- second copy steps aside: Wireshark refuses a second protocol "homatb".
if Dissector.get("homatb") then return end

local homatb = Proto("homatb", "homatb transport (Homa wire format)")

-- Packet types (wire.Type).
local T_DATA, T_GRANT, T_RESEND, T_RPC_UNKNOWN, T_BUSY = 0x10, 0x11, 0x12, 0x13, 0x14
local T_CUTOFFS, T_FREEZE, T_NEED_ACK, T_ACK = 0x15, 0x16, 0x17, 0x18
local T_START_MSG, T_PULL, T_NACK = 0x19, 0x1a, 0x1b

local type_names = {
	[T_DATA] = "DATA", [T_GRANT] = "GRANT", [T_RESEND] = "RESEND",
	[T_RPC_UNKNOWN] = "RPC_UNKNOWN", [T_BUSY] = "BUSY", [T_CUTOFFS] = "CUTOFFS",
	[T_FREEZE] = "FREEZE", [T_NEED_ACK] = "NEED_ACK", [T_ACK] = "ACK",
	[T_START_MSG] = "START_MSG", [T_PULL] = "PULL", [T_NACK] = "NACK",
}

-- Sizes (wire.CommonLen, wire.DataLen, wire.GrantLen, ...): the bytes each
-- type's fixed part needs. Types with no body are the common header alone.
local COMMON_LEN = 28
local header_len = {
	[T_DATA] = 56, [T_GRANT] = 33, [T_RESEND] = 37, [T_RPC_UNKNOWN] = 28,
	[T_BUSY] = 28, [T_CUTOFFS] = 62, [T_FREEZE] = 28, [T_NEED_ACK] = 28,
	[T_ACK] = 80, [T_START_MSG] = 36, [T_PULL] = 32, [T_NACK] = 36,
}

local MAX_PRIORITIES = 8 -- wire.MaxPriorities
local MAX_ACKS = 5 -- wire.MaxAcks
local RESEND_ALL = 0xffffffff -- wire.ResendAll
local DOFF_DATA, DOFF_CONTROL = 0xe0, 0x50

local f = {
	-- Common header (wire.Common), bytes 0..27.
	sport = ProtoField.uint16("homatb.sport", "Source port", base.DEC),
	dport = ProtoField.uint16("homatb.dport", "Destination port", base.DEC),
	sequence = ProtoField.uint32("homatb.sequence", "Sequence", base.DEC),
	flags = ProtoField.uint8("homatb.flags", "Common flags", base.HEX),
	trimmed = ProtoField.bool("homatb.trimmed", "Trimmed by the switch", 8, nil, 0x01),
	type = ProtoField.uint8("homatb.type", "Type", base.HEX, type_names),
	doff = ProtoField.uint8("homatb.doff", "Data offset", base.HEX),
	rank = ProtoField.uint32("homatb.rank", "Rank (pFabric: bytes left)", base.DEC),
	sender_id = ProtoField.uint64("homatb.sender_id", "Sender's RPC id", base.DEC),
	-- Derived from the common header and the IP header.
	rpc_id = ProtoField.uint64("homatb.rpc_id", "RPC id (the client's)", base.DEC),
	from_client = ProtoField.bool("homatb.from_client", "From the client"),
	priority = ProtoField.uint8("homatb.priority", "Priority (IP TOS >> 5)", base.DEC),
	rpc_first = ProtoField.framenum("homatb.rpc.first_frame", "First packet of this RPC"),
	rpc_prev = ProtoField.framenum("homatb.rpc.prev_frame", "Previous packet of this RPC"),
	rpc_time = ProtoField.relative_time("homatb.rpc.time", "Time since the RPC's first packet"),

	-- DATA (wire.Data), bytes 28..55, then payload.
	data_message_length = ProtoField.uint32("homatb.data.message_length", "Message length", base.DEC),
	data_incoming = ProtoField.uint32("homatb.data.incoming", "Incoming", base.DEC),
	data_ack_id = ProtoField.uint64("homatb.data.ack_id", "Piggybacked ack: client id", base.DEC),
	data_ack_port = ProtoField.uint16("homatb.data.ack_port", "Piggybacked ack: server port", base.DEC),
	data_cutoff_version = ProtoField.uint16("homatb.data.cutoff_version", "Cutoff version", base.DEC),
	data_retransmit = ProtoField.uint8("homatb.data.retransmit", "Retransmit", base.DEC),
	data_flags = ProtoField.uint8("homatb.data.flags", "DATA flags", base.HEX),
	data_incast = ProtoField.bool("homatb.data.incast", "Incast-limited request", 8, nil, 0x01),
	data_pad = ProtoField.uint16("homatb.data.pad", "Pad", base.HEX),
	data_offset = ProtoField.uint32("homatb.data.offset", "Segment offset", base.DEC),
	data_payload_length = ProtoField.uint32("homatb.data.payload_length", "Payload length", base.DEC),
	data_payload = ProtoField.bytes("homatb.data.payload", "Payload"),

	-- GRANT (wire.Grant).
	grant_offset = ProtoField.uint32("homatb.grant.offset", "Granted offset", base.DEC),
	grant_priority = ProtoField.uint8("homatb.grant.priority", "Priority for granted bytes", base.DEC),

	-- RESEND (wire.Resend).
	resend_offset = ProtoField.uint32("homatb.resend.offset", "Offset", base.DEC),
	resend_length = ProtoField.uint32("homatb.resend.length", "Length", base.DEC),
	resend_priority = ProtoField.uint8("homatb.resend.priority", "Priority for resent bytes", base.DEC),

	-- CUTOFFS (wire.Cutoffs).
	cutoffs_cutoff = ProtoField.uint32("homatb.cutoffs.cutoff", "Largest message length", base.DEC),
	cutoffs_version = ProtoField.uint16("homatb.cutoffs.version", "Cutoff version", base.DEC),

	-- ACK (wire.Ack).
	ack_num_acks = ProtoField.uint16("homatb.ack.num_acks", "Acks", base.DEC),
	ack_client_id = ProtoField.uint64("homatb.ack.client_id", "Acked client id", base.DEC),
	ack_server_port = ProtoField.uint16("homatb.ack.server_port", "Acked server port", base.DEC),

	-- START_MSG (wire.StartMsg).
	start_message_length = ProtoField.uint32("homatb.start_msg.message_length", "Message length", base.DEC),
	start_cutoff_version = ProtoField.uint16("homatb.start_msg.cutoff_version", "Cutoff version", base.DEC),
	start_flags = ProtoField.uint8("homatb.start_msg.flags", "DATA flags", base.HEX),
	start_incast = ProtoField.bool("homatb.start_msg.incast", "Incast-limited request", 8, nil, 0x01),

	-- PULL and NACK (wire.Pull, wire.Nack).
	pull_count = ProtoField.uint32("homatb.pull.count", "PULLs so far", base.DEC),
	nack_offset = ProtoField.uint32("homatb.nack.offset", "Offset", base.DEC),
	nack_length = ProtoField.uint32("homatb.nack.length", "Length", base.DEC),
}
local field_list = {}
for _, v in pairs(f) do field_list[#field_list + 1] = v end
homatb.fields = field_list

local e = {
	-- The packet cannot be what it claims: shorter than its type's header,
	-- an unknown type, or a doff byte other than the type's.
	malformed = ProtoExpert.new("homatb.malformed", "Malformed homatb packet",
		expert.group.MALFORMED, expert.severity.ERROR),
	-- A field holds a value the protocol forbids (wire.ErrInvalid).
	invalid = ProtoExpert.new("homatb.invalid", "Invalid field value",
		expert.group.PROTOCOL, expert.severity.WARN),
	-- The capture kept fewer bytes than the header has (snaplen).
	snapped = ProtoExpert.new("homatb.snapped", "Header cut by the capture's snaplen",
		expert.group.UNDECODED, expert.severity.NOTE),
	trimmed = ProtoExpert.new("homatb.trimmed.note", "DATA trimmed to its header by the switch (NDP)",
		expert.group.SEQUENCE, expert.severity.NOTE),
	retransmit = ProtoExpert.new("homatb.retransmit.note", "Retransmitted DATA (answers a RESEND)",
		expert.group.SEQUENCE, expert.severity.NOTE),
}
homatb.experts = { e.malformed, e.invalid, e.snapped, e.trimmed, e.retransmit }

local ip_dsfield = Field.new("ip.dsfield")
local frame_time = Field.new("frame.time")

-- RPCs seen so far, keyed by the client's address and the RPC id; per
-- frame, what the first pass found (later passes and the GUI reread it).
local rpcs, frames = {}, {}

function homatb.init()
	rpcs, frames = {}, {}
end

-- Reader of one packet: adds fields that were captured, notes those that
-- were not.
local function reader(tvb, tree)
	local r = { tvb = tvb, tree = tree, clen = tvb:len(), snapped = false }
	-- add puts field fld at [off, off+size) into parent and returns its
	-- value (a number, or a UInt64 for 8 bytes), or nil when the capture
	-- stopped before it.
	function r.add(parent, fld, off, size)
		if off + size > r.clen then
			r.snapped = true
			return nil
		end
		local rng = tvb(off, size)
		local item = parent:add(fld, rng)
		if size == 8 then return rng:uint64(), item end
		return rng:uint(), item
	end
	return r
end

local function fmt_id(id) return tostring(id) end

-- dissect_body adds the type-specific fields of a packet of type t; it
-- returns the Info text after "TYPE id=N" and a list of invalid-value
-- complaints.
local function dissect_body(t, r, tree, pinfo, tvb, rlen, prio, rank)
	local add, info, bad = r.add, "", {}
	local function complain(s) bad[#bad + 1] = s end
	if t == T_DATA then
		local len = add(tree, f.data_message_length, 28, 4)
		add(tree, f.data_incoming, 32, 4)
		add(tree, f.data_ack_id, 36, 8)
		add(tree, f.data_ack_port, 44, 2)
		add(tree, f.data_cutoff_version, 46, 2)
		local retx = add(tree, f.data_retransmit, 48, 1)
		local flags = add(tree, f.data_flags, 49, 1)
		if flags then tree:add(f.data_incast, tvb(49, 1)) end
		add(tree, f.data_pad, 50, 2)
		local off = add(tree, f.data_offset, 52, 4)
		local n = rlen - 56
		tree:add(f.data_payload_length, n):set_generated()
		if r.clen > 56 then tree:add(f.data_payload, tvb(56)) end
		local trimmed = tvb(8, 1):uint() % 2 == 1
		if len == 0 then complain("zero message length") end
		if len and off and len > 0 and off >= len then
			complain(string.format("offset %d beyond length %d", off, len))
		end
		if retx and retx > 1 then complain(string.format("retransmit %d", retx)) end
		if trimmed then
			-- A receiver ignores whatever follows a trimmed header.
			tree:add_proto_expert_info(e.trimmed)
		else
			if n == 0 then complain("no payload") end
			if len and off and off + n > len then
				complain(string.format("bytes %d+%d beyond length %d", off, n, len))
			end
		end
		if retx == 1 then tree:add_proto_expert_info(e.retransmit) end
		info = string.format(" off=%s/%s len=%d", off or "?", len or "?", n)
		if trimmed then info = info .. " TRIMMED" end
		if retx == 1 then info = info .. " retx" end
		if flags and flags % 2 == 1 then info = info .. " incast" end
	elseif t == T_GRANT then
		local off = add(tree, f.grant_offset, 28, 4)
		local p = add(tree, f.grant_priority, 32, 1)
		if p and p >= MAX_PRIORITIES then complain(string.format("priority %d", p)) end
		info = string.format(" off=%s grant_prio=%s", off or "?", p or "?")
	elseif t == T_RESEND then
		local off = add(tree, f.resend_offset, 28, 4)
		local len = add(tree, f.resend_length, 32, 4)
		local p = add(tree, f.resend_priority, 36, 1)
		if p and p >= MAX_PRIORITIES then complain(string.format("priority %d", p)) end
		if len == 0 then complain("zero length") end
		local l = len == RESEND_ALL and "all" or tostring(len or "?")
		info = string.format(" off=%s len=%s resend_prio=%s", off or "?", l, p or "?")
	elseif t == T_CUTOFFS then
		for i = 0, MAX_PRIORITIES - 1 do
			local _, item = add(tree, f.cutoffs_cutoff, 28 + 4 * i, 4)
			if item then item:prepend_text("Priority " .. i .. ": ") end
		end
		local v = add(tree, f.cutoffs_version, 60, 2)
		if v == 0 then complain("version 0") end
		info = string.format(" version=%s", v or "?")
	elseif t == T_ACK then
		local n = add(tree, f.ack_num_acks, 28, 2)
		if n and n > MAX_ACKS then complain(string.format("%d acks", n)) end
		for i = 0, math.min(n or 0, MAX_ACKS) - 1 do
			local o = 30 + 10 * i
			local sub = tree:add(tvb(o, math.min(10, math.max(0, r.clen - o))), "Ack " .. i)
			local id = add(sub, f.ack_client_id, o, 8)
			local port = add(sub, f.ack_server_port, o + 8, 2)
			sub:set_text(string.format("Ack %d: client id %s, server port %s", i, id and fmt_id(id) or "?", port or "?"))
		end
		info = string.format(" acks=%s", n or "?")
	elseif t == T_START_MSG then
		local len = add(tree, f.start_message_length, 28, 4)
		add(tree, f.start_cutoff_version, 32, 2)
		local flags = add(tree, f.start_flags, 34, 1)
		if flags then tree:add(f.start_incast, tvb(34, 1)) end
		if len == 0 then complain("message length 0") end
		info = string.format(" len=%s", len or "?")
		if flags and flags % 2 == 1 then info = info .. " incast" end
	elseif t == T_PULL then
		local n = add(tree, f.pull_count, 28, 4)
		info = string.format(" count=%s", n or "?")
	elseif t == T_NACK then
		local off = add(tree, f.nack_offset, 28, 4)
		local len = add(tree, f.nack_length, 32, 4)
		if len == 0 then complain("zero length") end
		info = string.format(" off=%s len=%s", off or "?", len or "?")
	end
	if prio then info = info .. " prio=" .. prio end
	if rank and rank ~= 0 then info = info .. " rank=" .. rank end
	return info, bad
end

-- track records the RPC of this packet on the first pass and shows the
-- RPC's first and previous packets and the time since the first.
local function track(pinfo, tree, client, rpc_id)
	local key = client .. "/" .. tostring(rpc_id)
	local fr = frames[pinfo.number]
	if not pinfo.visited and not fr then
		local rpc = rpcs[key]
		if not rpc then
			rpc = { first = pinfo.number, ts = frame_time().value }
			rpcs[key] = rpc
		end
		fr = { first = rpc.first, ts = rpc.ts, prev = rpc.last }
		rpc.last = pinfo.number
		frames[pinfo.number] = fr
	end
	if not fr then return end
	tree:add(f.rpc_first, fr.first):set_generated()
	if fr.prev then tree:add(f.rpc_prev, fr.prev):set_generated() end
	tree:add(f.rpc_time, frame_time().value - fr.ts):set_generated()
end

function homatb.dissector(tvb, pinfo, root)
	pinfo.cols.protocol = "homatb"
	local rlen = tvb:reported_len()
	local tree = root:add(homatb, tvb())
	local r = reader(tvb, tree)
	local add = r.add

	local prio
	local ds = { ip_dsfield() }
	if #ds > 0 then
		prio = math.floor(ds[#ds].value / 32)
		tree:add(f.priority, prio):set_generated()
	end

	if rlen < COMMON_LEN then
		tree:add_proto_expert_info(e.malformed,
			string.format("Truncated: %d bytes, a common header needs %d", rlen, COMMON_LEN))
		pinfo.cols.info = string.format("homatb truncated (%d bytes) [MALFORMED]", rlen)
		return
	end

	add(tree, f.sport, 0, 2)
	add(tree, f.dport, 2, 2)
	add(tree, f.sequence, 4, 4)
	local flags = add(tree, f.flags, 8, 1)
	if flags then tree:add(f.trimmed, tvb(8, 1)) end
	local t = add(tree, f.type, 11, 1)
	local doff = add(tree, f.doff, 12, 1)
	local rank = add(tree, f.rank, 16, 4)
	local sid = add(tree, f.sender_id, 20, 8)
	if t == nil or sid == nil then
		tree:add_proto_expert_info(e.snapped)
		pinfo.cols.info = "homatb (header cut by snaplen)"
		return
	end

	local name = type_names[t]
	local from_client = sid:band(1) == UInt64.new(0)
	local rpc_id = sid:band(UInt64.new(0xfffffffe, 0xffffffff))
	tree:add(f.rpc_id, rpc_id):set_generated()
	tree:add(f.from_client, from_client):set_generated()
	local client = tostring(from_client and pinfo.src or pinfo.dst)
	track(pinfo, tree, client, rpc_id)

	if not name then
		tree:add_proto_expert_info(e.malformed, string.format("Unknown type 0x%02x", t))
		pinfo.cols.info = string.format("homatb type 0x%02x id=%s [MALFORMED]", t, fmt_id(rpc_id))
		return
	end
	tree:append_text(", " .. name)

	local problems = {}
	local want_doff = t == T_DATA and DOFF_DATA or DOFF_CONTROL
	if doff and doff ~= want_doff then
		tree:add_proto_expert_info(e.malformed, string.format("doff 0x%02x, want 0x%02x", doff, want_doff))
	end
	local need = header_len[t]
	if rlen < need then
		tree:add_proto_expert_info(e.malformed,
			string.format("Truncated %s: %d bytes, its header needs %d", name, rlen, need))
	end

	local info, bad = dissect_body(t, r, tree, pinfo, tvb, rlen, prio, rank)
	for _, s in ipairs(bad) do tree:add_proto_expert_info(e.invalid, name .. ": " .. s) end
	if r.snapped and rlen >= need then tree:add_proto_expert_info(e.snapped) end

	local dir = from_client and "" or " resp"
	local mark = ""
	if rlen < need or (doff and doff ~= want_doff) then
		mark = " [MALFORMED]"
	elseif #bad > 0 then
		mark = " [INVALID: " .. table.concat(bad, "; ") .. "]"
	end
	pinfo.cols.info = string.format("%s id=%s%s%s%s", name, fmt_id(rpc_id), dir, info, mark)
end

DissectorTable.get("ip.proto"):add(146, homatb)

-- UET: the Ultra Ethernet Transport's packets as homatb's uet transport
-- sends them, on UDP port 4793 (package wire's uet.go: the PDS prologue,
-- RUD request, ACK and ACK_CC with the SACK bitmap, NACK, control, and the
-- SES standard request). Fields are named uet.*; the entropy is the UDP
-- source port.
local uet = Proto("uet", "Ultra Ethernet Transport (homatb)")
local U_RUD, U_ROD, U_ACK, U_ACK_CC, U_NACK, U_CTL, U_RUD_CC, U_ROD_CC = 2, 3, 7, 8, 10, 11, 13, 14
local uet_types = {[U_RUD] = "RUD_REQ", [U_ROD] = "ROD_REQ", [U_ACK] = "ACK", [U_ACK_CC] = "ACK_CC",
	[U_NACK] = "NACK", [U_CTL] = "CONTROL", [U_RUD_CC] = "RUD_CC_REQ", [U_ROD_CC] = "ROD_CC_REQ"}
local uet_len = {[U_RUD] = 12, [U_ROD] = 12, [U_ACK] = 12, [U_ACK_CC] = 32, [U_NACK] = 16, [U_CTL] = 16,
	[U_RUD_CC] = 16, [U_ROD_CC] = 16}
local nack_codes = {[0x01] = "TRIMMED", [0x0b] = "PSN_OOR_WINDOW"}
local uf = {
	type = ProtoField.uint16("uet.pds.type", "PDS type", base.DEC, uet_types, 0xf800),
	next = ProtoField.uint16("uet.pds.next_hdr", "Next header / control type", base.DEC, nil, 0x0780),
	flags = ProtoField.uint16("uet.pds.flags", "Flags", base.HEX, nil, 0x007f),
	ecn = ProtoField.bool("uet.pds.ecn_marked", "ECN marked", 16, nil, 0x0020),
	retrans = ProtoField.bool("uet.pds.retrans", "Retransmission", 16, nil, 0x0010),
	ackreq = ProtoField.bool("uet.pds.ackreq", "ACK request", 16, nil, 0x0008),
	syn = ProtoField.bool("uet.pds.syn", "SYN", 16, nil, 0x0004),
	probe = ProtoField.bool("uet.pds.probe", "Probe", 16, nil, 0x0008),
	request = ProtoField.uint16("uet.pds.ack_request", "ACK request type", base.DEC, nil, 0x0006),
	nack_type = ProtoField.bool("uet.pds.nack_type", "NACK type RUDI", 16, nil, 0x0008),
	clear_off = ProtoField.uint16("uet.req.clear_psn_offset", "Clear PSN offset", base.DEC),
	psn = ProtoField.uint32("uet.pds.psn", "PSN", base.DEC),
	spdcid = ProtoField.uint16("uet.pds.spdcid", "Source PDC id", base.DEC),
	dpdcid = ProtoField.uint16("uet.pds.dpdcid", "Destination PDC id", base.DEC),
	syn_off = ProtoField.uint16("uet.req.syn_psn_offset", "PSN offset (SYN)", base.DEC, nil, 0x0fff),
	ccc_id = ProtoField.uint8("uet.req.ccc_id", "CCC id", base.DEC),
	credit_target = ProtoField.uint24("uet.req.credit_target", "Credit target (bytes to send)", base.DEC),
	ack_off = ProtoField.uint16("uet.ack.psn_offset", "ACK PSN offset / probe opaque", base.DEC),
	cack = ProtoField.uint32("uet.ack.cack_psn", "Cumulative ACK PSN", base.DEC),
	cc_type = ProtoField.uint8("uet.ack.cc_type", "CC type", base.DEC, {[0] = "NSCC", [1] = "CREDIT"}, 0xf0),
	mpr = ProtoField.uint8("uet.ack.mpr", "Maximum PSN range", base.DEC),
	sack_off = ProtoField.uint16("uet.ack.sack_psn_offset", "SACK PSN offset", base.DEC),
	sack = ProtoField.uint64("uet.ack.sack_bitmap", "SACK bitmap", base.HEX),
	service = ProtoField.uint16("uet.ack.service_time", "Service time", base.DEC),
	rcvd = ProtoField.uint24("uet.ack.rcvd_bytes", "Received bytes", base.DEC),
	credit = ProtoField.uint24("uet.ack.credit", "Credit", base.DEC),
	ooo = ProtoField.uint16("uet.ack.ooo_count", "Out-of-order count", base.DEC),
	nack_code = ProtoField.uint8("uet.nack.code", "NACK code", base.HEX, nack_codes),
	vendor = ProtoField.uint8("uet.nack.vendor_code", "Vendor code", base.HEX),
	payload = ProtoField.uint32("uet.pds.payload", "Payload word", base.HEX),
	opcode = ProtoField.uint8("uet.ses.opcode", "SES opcode", base.HEX, {[5] = "SEND"}, 0x3f),
	version = ProtoField.uint8("uet.ses.version", "SES version", base.DEC, nil, 0xc0),
	ses_flags = ProtoField.uint8("uet.ses.flags", "SES flags", base.HEX, nil, 0x3f),
	som = ProtoField.bool("uet.ses.som", "Start of message", 8, nil, 0x01),
	eom = ProtoField.bool("uet.ses.eom", "End of message", 8, nil, 0x02),
	msg_id = ProtoField.uint16("uet.ses.msg_id", "Message id", base.DEC),
	ri_gen = ProtoField.uint8("uet.ses.ri_generation", "Resource index generation", base.DEC),
	job = ProtoField.uint24("uet.ses.job_id", "Job id", base.DEC),
	pid = ProtoField.uint16("uet.ses.pid_on_fep", "PID on FEP", base.DEC, nil, 0x0fff),
	ri = ProtoField.uint16("uet.ses.resource_index", "Resource index", base.DEC, nil, 0x0fff),
	offset = ProtoField.uint64("uet.ses.buffer_offset", "Buffer offset", base.DEC),
	initiator = ProtoField.uint32("uet.ses.initiator", "Initiator", base.DEC),
	match = ProtoField.uint64("uet.ses.match_bits", "Match bits (homatb: RPC id)", base.DEC),
	hdata = ProtoField.uint64("uet.ses.header_data", "Header data (homatb: ports)", base.HEX),
	length = ProtoField.uint32("uet.ses.request_length", "Request length", base.DEC),
	plen = ProtoField.uint32("uet.payload_length", "Payload length", base.DEC),
}
uet.fields = uf
local ue = {malformed = ProtoExpert.new("uet.malformed", "Malformed UET packet", expert.group.MALFORMED, expert.severity.ERROR)}
uet.experts = {ue.malformed}

function uet.dissector(tvb, pinfo, root)
	local n = tvb:len()
	if n < 2 then return 0 end
	pinfo.cols.protocol = "UET"
	local tree = root:add(uet, tvb(0, n))
	local p = tvb(0, 2)
	local t = bit.rshift(p:uint(), 11)
	local name = uet_types[t] or string.format("type %d", t)
	tree:add(uf.type, p)
	tree:add(uf.next, p)
	local fl = tree:add(uf.flags, p)
	local need = uet_len[t]
	if not need or n < need then
		tree:add_proto_expert_info(ue.malformed, string.format("%s in %d bytes", name, n))
		pinfo.cols.info = "UET " .. name .. " [MALFORMED]"
		return n
	end
	local info
	local req = t == U_RUD or t == U_ROD or t == U_RUD_CC or t == U_ROD_CC
	if req or t == U_CTL then
		fl:add(uf.retrans, p); fl:add(uf.ackreq, p); fl:add(uf.syn, p)
		local syn = bit.band(p:uint(), 0x0004) ~= 0
		if t == U_CTL then tree:add(uf.ack_off, tvb(2, 2)) else tree:add(uf.clear_off, tvb(2, 2)) end
		tree:add(uf.psn, tvb(4, 4))
		tree:add(uf.spdcid, tvb(8, 2))
		if syn and t ~= U_CTL then tree:add(uf.syn_off, tvb(10, 2)) else tree:add(uf.dpdcid, tvb(10, 2)) end
		info = string.format("%s psn=%u spdcid=%u", name, tvb(4, 4):uint(), tvb(8, 2):uint())
		local o = need -- the SES header's offset
		if t == U_RUD_CC or t == U_ROD_CC then
			tree:add(uf.ccc_id, tvb(12, 1))
			tree:add(uf.credit_target, tvb(13, 3))
		end
		if t == U_CTL then
			tree:add(uf.payload, tvb(12, 4))
		elseif n >= o + 44 then
			local s = tree:add(tvb(o, 44), "SES standard request")
			s:add(uf.opcode, tvb(o, 1))
			s:add(uf.version, tvb(o + 1, 1))
			local sf = s:add(uf.ses_flags, tvb(o + 1, 1))
			sf:add(uf.som, tvb(o + 1, 1)); sf:add(uf.eom, tvb(o + 1, 1))
			s:add(uf.msg_id, tvb(o + 2, 2))
			s:add(uf.ri_gen, tvb(o + 4, 1))
			s:add(uf.job, tvb(o + 5, 3))
			s:add(uf.pid, tvb(o + 8, 2))
			s:add(uf.ri, tvb(o + 10, 2))
			s:add(uf.offset, tvb(o + 12, 8))
			s:add(uf.initiator, tvb(o + 20, 4))
			s:add(uf.match, tvb(o + 24, 8))
			s:add(uf.hdata, tvb(o + 32, 8))
			s:add(uf.length, tvb(o + 40, 4))
			tree:add(uf.plen, n - o - 44)
			info = info .. string.format(" off=%s len=%u", tostring(tvb(o + 12, 8):uint64()), tvb(o + 40, 4):uint())
		end
	elseif t == U_ACK or t == U_ACK_CC then
		fl:add(uf.ecn, p); fl:add(uf.retrans, p); fl:add(uf.probe, p); fl:add(uf.request, p)
		tree:add(uf.ack_off, tvb(2, 2))
		tree:add(uf.cack, tvb(4, 4))
		tree:add(uf.spdcid, tvb(8, 2))
		tree:add(uf.dpdcid, tvb(10, 2))
		info = string.format("%s cack=%u", name, tvb(4, 4):uint())
		if t == U_ACK_CC then
			tree:add(uf.cc_type, tvb(12, 1))
			tree:add(uf.mpr, tvb(13, 1))
			tree:add(uf.sack_off, tvb(14, 2))
			tree:add(uf.sack, tvb(16, 8))
			if bit.rshift(tvb(12, 1):uint(), 4) == 1 then
				tree:add(uf.credit, tvb(24, 3))
			else
				tree:add(uf.service, tvb(24, 2))
				tree:add(uf.rcvd, tvb(27, 3))
			end
			tree:add(uf.ooo, tvb(30, 2))
			info = info .. " sack=0x" .. tvb(16, 8):bytes():tohex()
		end
	else -- NACK
		fl:add(uf.ecn, p); fl:add(uf.retrans, p); fl:add(uf.nack_type, p)
		tree:add(uf.nack_code, tvb(2, 1))
		tree:add(uf.vendor, tvb(3, 1))
		tree:add(uf.psn, tvb(4, 4))
		tree:add(uf.spdcid, tvb(8, 2))
		tree:add(uf.dpdcid, tvb(10, 2))
		tree:add(uf.payload, tvb(12, 4))
		info = string.format("%s psn=%u code=%s", name, tvb(4, 4):uint(), nack_codes[tvb(2, 1):uint()] or tostring(tvb(2, 1):uint()))
	end
	pinfo.cols.info = "UET " .. info
	return n
end

DissectorTable.get("udp.port"):add(4793, uet)
