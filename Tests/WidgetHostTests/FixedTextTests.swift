import Foundation
import Testing
@testable import WidgetHost

@Suite("Fixed-point text")
struct FixedTextTests {
    /// The same text as printf's `%.*f` (Foundation's `String(format:)`)
    /// for the values the outputs print, negative zero and large values too.
    @Test func itWritesWhatPrintfWrites() {
        var values: [Double] = [0, -0.0, 0.004, -0.004, 0.005, 0.015, 0.125, 0.8, 1.005, 9.995, 12.3456, 99.99, 1234.5678,
                                -3.25, 1e9 + 0.5, 123_456_789.987, 1e17, 1e300, .infinity, -.infinity]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 { values.append(Double.random(in: -100_000...100_000, using: &generator)) }
        for _ in 0..<1000 { values.append(Double.random(in: 0...1, using: &generator)) }
        // Exact ties and near-ties at every place, and subnormals.
        for i in 0..<200 { values.append(Double(i) + 0.5); values.append(Double(i) / 1000 + 0.0005) }
        values += [5e-324, 1e-310, 2.5e-8, 0.000_000_000_5]
        for value in values {
            for decimals in 0...9 {
                #expect(fixedText(value, decimals: decimals) == String(format: "%.*f", decimals, value), "\(value), \(decimals) decimals")
            }
        }
    }
}
