; References: calls and type names in declarations and signatures.
(call_expression function: (identifier) @reference)
(call_expression function: (field_expression field: (field_identifier) @reference))
(parameter_declaration type: (type_identifier) @reference)
(declaration type: (type_identifier) @reference)
(field_declaration type: (type_identifier) @reference)
(function_definition type: (type_identifier) @reference)
(struct_specifier name: (type_identifier) @reference !body)
