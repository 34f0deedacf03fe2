// `import Amber` is all a Swift program needs: the layers below contexts
// come with it.
@_exported import AmberModel
@_exported import AmberSQLiteStore
@_exported import AmberStore
@_exported import AmberTransformers
@_exported import AmberValues
