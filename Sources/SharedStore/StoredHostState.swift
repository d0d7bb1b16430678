/// A host's own state for one bundle, kept in the bundle's app-group
/// database so that a host started again continues where it was: named
/// records (a widget, a budget window, a control), each a `StoreValue` the
/// host shapes as it likes (stored in the store's binary form). The store does not read them, does not count them in the group's
/// quota and does not log them for observers: they are the host's
/// bookkeeping, not the scripts' data.
///
/// Every write is one transaction: a host killed mid-write leaves the
/// records of its last completed write.
extension StoreGroup {
    /// `bundle`'s host records, by name.
    public func hostState(of bundle: String) throws(StoreError) -> [String: StoreValue] {
        try locked { () throws(StoreError) in try database.hostState(of: bundle) }
    }

    /// Writes `records` of `bundle` in one transaction: each name gets its
    /// value, or is deleted when it is nil. Nothing else changes.
    public func writeHostState(of bundle: String, _ records: [(name: String, record: StoreValue?)]) throws(StoreError) {
        guard !records.isEmpty else { return }
        try locked { () throws(StoreError) in
            _ = try database.write(limits: limits, group: id) { (_: inout StoreWriter) throws(StoreError) in
                try database.writeHostState(of: bundle, records)
            }
        }
    }
}

extension StoreDatabase {
    func hostState(of bundle: String) throws(StoreError) -> [String: StoreValue] {
        let s = try statement(.hostState)
        defer { s.reset() }
        s.bind(1, text: bundle)
        var records: [String: StoreValue] = [:]
        while try s.step() {
            let name = s.text(0)
            records[name] = try s.withBytes(1) { bytes throws(StoreError) in
                guard let value = StoreValue.decode(bytes) else {
                    throw StoreError(.corruptValue, "store database \(path): the host record '\(name)' of \(bundle) does not decode")
                }
                return value
            }
        }
        return records
    }

    /// The caller holds the write transaction.
    func writeHostState(of bundle: String, _ records: [(name: String, record: StoreValue?)]) throws(StoreError) {
        for (name, record) in records {
            let s = try statement(record == nil ? .deleteHostState : .upsertHostState)
            s.bind(1, text: bundle)
            s.bind(2, text: name)
            if let record { s.bind(3, blob: record.encoded()) }
            try s.run()
        }
    }
}
