/// An immutable value on the heap, for a large optional part of a record that most records leave
/// nil. A record holding it inline is moved by copying all of its bytes, and Swift moves a record
/// several times on its way from an exchange to the monitors (`memcpy` calls counted with
/// uprobes); boxed, the part costs one pointer in every move, and an allocation only when set.
/// Replaced, never mutated, so it is shared across threads like the record that holds it.
public final class ValueBox<Value: Sendable>: Sendable {
    public let value: Value

    public init(_ value: Value) {
        self.value = value
    }
}
