; Definitions: @definition.<kind> on the whole node, @name on its name; @scope qualifies without defining.
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.union
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.function
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name)]) @scope

(use_declaration argument: (_) @import)
(extern_crate_declaration name: (identifier) @import)
